"""Slurm hostlist expressions: `gpu-[01-04,07],cpu1` <-> a list of node names. No I/O.

Bounded: an expression may expand to at most `max_hosts` names (a hostile `n[0-99999999]`
is an error, not a memory blow-up).
"""

from __future__ import annotations

import re

from schedmate.core.errors import InputError

__all__ = ["expand_hostlist", "compress_hostlist", "is_hostname"]

MAX_HOSTS = 100_000
_HOST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62})$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def is_hostname(name: str) -> bool:
    """A plausible node name (letters, digits, '.', '_', '-'; at most 63 characters)."""
    return bool(_HOST.match(name))


def _split_top(expr: str) -> list[str]:
    """Split on commas outside brackets."""
    parts: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in expr:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"hostlist {expr!r}: unbalanced ']'")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth != 0:
        raise InputError(f"hostlist {expr!r}: unbalanced '['")
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()]


def _expand_one(part: str, expr: str, budget: int) -> list[str]:
    m = re.search(r"\[([^\[\]]*)\]", part)
    if m is None:
        return [part]
    prefix, body, suffix = part[: m.start()], m.group(1), part[m.end() :]
    out: list[str] = []
    for rng in body.split(","):
        r = _RANGE.match(rng.strip())
        if r is None:
            raise InputError(f"hostlist {expr!r}: bad range {rng!r}")
        lo_s, hi_s = r.group(1), r.group(2) or r.group(1)
        lo, hi = int(lo_s), int(hi_s)
        if hi < lo:
            raise InputError(f"hostlist {expr!r}: range {rng!r} runs backwards")
        if hi - lo + 1 > budget:
            raise InputError(f"hostlist {expr!r}: more than {MAX_HOSTS:,} hosts")
        width = len(lo_s) if lo_s.startswith("0") or len(lo_s) == len(hi_s) else 0
        for i in range(lo, hi + 1):
            out.extend(_expand_one(f"{prefix}{i:0{width}d}{suffix}", expr, budget))
            if len(out) > budget:
                raise InputError(f"hostlist {expr!r}: more than {MAX_HOSTS:,} hosts")
    return out


def expand_hostlist(expr: str | None, *, max_hosts: int = MAX_HOSTS) -> list[str]:
    """`gpu-[01-03,07]` -> ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-07']; '' or '(null)' -> [].

    Every name must be a plausible hostname; anything else is an `InputError`."""
    expr = (expr or "").strip()
    if not expr or expr in ("(null)", "None", "N/A"):
        return []
    if len(expr) > 100_000:
        raise InputError("hostlist: longer than 100,000 characters")
    names: list[str] = []
    for part in _split_top(expr):
        names.extend(_expand_one(part, expr, max_hosts - len(names)))
        if len(names) > max_hosts:
            raise InputError(f"hostlist {expr[:80]!r}: more than {max_hosts:,} hosts")
    for n in names:
        if not is_hostname(n):
            raise InputError(f"hostlist {expr[:80]!r}: {n[:80]!r} is not a host name")
    return list(dict.fromkeys(names))


def compress_hostlist(names: list[str] | tuple[str, ...]) -> str:
    """The inverse: ['gpu-01', 'gpu-02', 'gpu-07'] -> 'gpu-[01-02,07]' (order kept per prefix)."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for n in dict.fromkeys(names):
        m = re.match(r"^(.*?)(\d+)$", n)
        if m is None:
            plain.append(n)
            order.append(n)
            continue
        key = (m.group(1), len(m.group(2)) if m.group(2).startswith("0") else 0)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(m.group(2)))
    out: list[str] = []
    for item in order:
        if isinstance(item, str):
            out.append(item)
            continue
        prefix, width = item
        nums = sorted(set(groups[item]))
        if len(nums) == 1:
            out.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        ranges: list[str] = []
        start = prev = nums[0]
        for x in [*nums[1:], None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            ranges.append(f"{start:0{width}d}" if start == prev else f"{start:0{width}d}-{prev:0{width}d}")
            if x is not None:
                start = prev = x
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)
