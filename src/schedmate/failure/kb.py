"""Knowledge base of failure signatures: a readable YAML file operators can extend.

Each signature has a category (infrastructure | application), a short `kind`, a confidence,
a suggested recovery, regex patterns (matched against one line), example lines (used for
embedding similarity when no pattern matches) and, for symptoms, an optional `defer_to`
regex: a line matching it shortly after names the cause better (a socket error, then the
GPU fault that killed the peer; a device-side assert, then the kernel's own assertion). The first matching signature in file order
wins, so specific signatures come before generic ones; an operator's own file is consulted
before the bundled one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from schedmate.core.errors import ConfigError

__all__ = ["Signature", "KnowledgeBase", "CATEGORIES", "RECOVERIES"]

CATEGORIES = ("infrastructure", "application")
_MATCH_EDGE = 4096  # characters of a long line's head and tail that signatures are matched on
RECOVERIES = ("requeue_exclude_node", "requeue", "drain_node_and_requeue", "resubmit_with_limit", "none")


@dataclass(frozen=True, slots=True)
class Signature:
    kind: str
    category: str
    confidence: float
    recovery: str
    description: str
    patterns: tuple[str, ...]
    examples: tuple[str, ...]
    regex: re.Pattern[str]
    # a symptom: a later line matching this (within a few lines) names the cause better
    defer_to: re.Pattern[str] | None = None
    # how many lines after the symptom `defer_to` looks (a scheduler's own report of why it
    # killed a job comes after the job's output, often tens of lines later)
    defer_within: int = 30

    @property
    def generic(self) -> bool:
        """Catch-alls (low confidence) only decide when nothing specific matched."""
        return self.confidence < 0.6


def _load_yaml(text: str, where: str) -> list[Signature]:
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{where}{line}: invalid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("signatures"), list):
        raise ConfigError(f"{where}: expected a mapping with a 'signatures' list")
    out: list[Signature] = []
    for i, raw in enumerate(doc["signatures"]):
        out.append(_signature(raw, f"{where}: signature #{i + 1}"))
    return out


def _signature(raw: Any, where: str) -> Signature:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping")
    try:
        kind, category = str(raw["kind"]), str(raw["category"])
        patterns = tuple(str(p) for p in raw["patterns"])
    except (KeyError, TypeError):
        raise ConfigError(f"{where}: needs kind, category and a list of patterns") from None
    if category not in CATEGORIES:
        raise ConfigError(f"{where} ({kind}): category must be one of {', '.join(CATEGORIES)}")
    recovery = str(raw.get("recovery", "none"))
    if recovery not in RECOVERIES:
        raise ConfigError(f"{where} ({kind}): recovery must be one of {', '.join(RECOVERIES)}")
    try:
        confidence = float(raw.get("confidence", 0.8))
    except (TypeError, ValueError):
        raise ConfigError(f"{where} ({kind}): confidence must be a number") from None
    if not 0 < confidence <= 1:
        raise ConfigError(f"{where} ({kind}): confidence must be in (0, 1]")
    if not patterns:
        raise ConfigError(f"{where} ({kind}): at least one pattern is needed")
    defer_to = None
    if raw.get("defer_to"):
        try:
            defer_to = re.compile(str(raw["defer_to"]), re.IGNORECASE)
        except re.error as exc:
            raise ConfigError(f"{where} ({kind}): bad defer_to pattern: {exc}") from None
    try:
        defer_within = int(raw.get("defer_within", 30))
    except (TypeError, ValueError):
        raise ConfigError(f"{where} ({kind}): defer_within must be a whole number of lines") from None
    if not 1 <= defer_within <= 10_000:
        raise ConfigError(f"{where} ({kind}): defer_within must be in 1..10000")
    try:
        regex = re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{where} ({kind}): bad pattern: {exc}") from None
    return Signature(
        kind,
        category,
        confidence,
        recovery,
        str(raw.get("description", "")),
        patterns,
        tuple(str(e) for e in raw.get("examples", []) or []),
        regex,
        defer_to,
        defer_within,
    )


class KnowledgeBase:
    """Ordered signatures; `match` returns the first (specific before generic) that fits."""

    def __init__(self, signatures: Sequence[Signature]) -> None:
        self.signatures = list(signatures)
        self.specific = [s for s in self.signatures if not s.generic]
        self.generic = [s for s in self.signatures if s.generic]

    @classmethod
    def load(cls, extra: str | Path | None = None) -> KnowledgeBase:
        """The bundled signatures, preceded by an operator's file when given."""
        bundled = resources.files("schedmate.data").joinpath("failure_signatures.yaml").read_text("utf-8")
        sigs = _load_yaml(bundled, "schedmate/data/failure_signatures.yaml")
        if extra:
            p = Path(extra)
            try:
                text = p.read_text("utf-8")
            except OSError as exc:
                raise ConfigError(f"{p}: cannot read signatures: {exc.strerror}") from None
            sigs = _load_yaml(text, str(p)) + sigs
        return cls(sigs)

    @classmethod
    def from_yaml(cls, text: str, where: str = "<signatures>") -> KnowledgeBase:
        return cls(_load_yaml(text, where))

    def match(self, line: str, *, include_generic: bool = True) -> Signature | None:
        if len(line) > 2 * _MATCH_EDGE:
            # a megabyte line (a dumped tensor, a glued bar) costs every pattern a full scan;
            # a message states its cause at its start, a glued one at its end
            line = f"{line[:_MATCH_EDGE]} ... {line[-_MATCH_EDGE:]}"
        for s in self.specific:
            if s.regex.search(line):
                return s
        if include_generic:
            for s in self.generic:
                if s.regex.search(line):
                    return s
        return None

    def examples(self) -> list[tuple[Signature, str]]:
        return [(s, e) for s in self.signatures for e in s.examples]
