"""Node names a log mentions near a failure: untrusted hints, never grounds for an action.

Names are read with Slurm's hostlist syntax (`gpu-[01-04,07]`), must look like host names,
and when the cluster's node list is known, must be on it. A word that merely follows
"node" (`Node failure on gpu-06`) is not a node: a name taken from free text needs a digit
unless the cluster knows it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence

from schedmate.core.errors import InputError
from schedmate.core.hostlist import expand_hostlist, is_hostname

__all__ = ["find_nodes", "find_node"]

_H = r"(?P<h>[A-Za-z][\w.-]{0,62}(?:\[[\d,\-]{1,200}\][\w.-]*)*)"
_NODE_PATTERNS = [
    re.compile(r"^" + _H + r":\d+:\d+ \[\d+\] NCCL"),  # host:pid:tid [gpu] NCCL ...
    re.compile(r"srun: error: " + _H + r": tasks? [\d\-,]+"),
    re.compile(r"\bNode failure on " + _H, re.I),
    re.compile(r"\bNodes? " + _H + r" not responding", re.I),
    re.compile(r"\b(?:on|failed on) (?:host|node) " + _H, re.I),
    re.compile(r"\b(?:JOB|STEP) \S+ ON " + _H + r" CANCELLED"),
    re.compile(r"\b(?:node(?:name|list)?|host(?:name)?)\s*[=:]\s*" + _H, re.I),
    re.compile(r"\b(?P<h>[a-z][\w-]{0,40}-worker-\d+)\b"),
]
_MAX_LINES = 400


def _names(expr: str, known: Collection[str] | None) -> list[str]:
    try:
        names = expand_hostlist(expr.rstrip(".,;:)"), max_hosts=1024)
    except InputError:
        return []
    out = []
    for n in names:
        if not is_hostname(n):
            continue
        if known is not None:
            if n in known:
                out.append(n)
        elif any(c.isdigit() for c in n):
            out.append(n)
    return out


def find_nodes(lines: Sequence[str], known: Collection[str] | None = None) -> list[str]:
    """Host names the lines mention, in order of appearance (validated against `known`)."""
    found: dict[str, None] = {}
    for line in lines[:_MAX_LINES]:
        for pat in _NODE_PATTERNS:
            for m in pat.finditer(line[:2000]):
                for n in _names(m.group("h"), known):
                    found.setdefault(n)
    return list(found)


def find_node(lines: Sequence[str], known: Collection[str] | None = None) -> str | None:
    """The first host name the lines mention (an untrusted hint)."""
    nodes = find_nodes(lines, known)
    return nodes[0] if nodes else None
