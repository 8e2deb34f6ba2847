"""Mask the variable parts of log lines into templates, in bulk.

Masking runs one regex over a whole batch of lines joined by newlines, so the per-line
cost is a dict lookup: this is what lets classification run at hundreds of thousands of
lines per second. Numbers, hex ids, paths' digits and progress-bar glyphs become `<*>`.
"""

from __future__ import annotations

import re

__all__ = ["mask_batch", "mask_line", "numeric_tokens", "MAX_TEMPLATE_CHARS"]

MAX_TEMPLATE_CHARS = 160

# hex ids (>= 8 chars incl. a digit), numbers with optional unit/exponent, bar glyph runs
_MASK = re.compile(
    r"\b0x[0-9a-fA-F]+\b"
    r"|\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b"
    r"|[-+]?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"
    r"|[█▏▎▍▌▋▊▉#>=\-]{3,}"
    r"|[ \t]{2,}"
)
_NUM_TOKEN = re.compile(r"[-+]?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?|\b(?:nan|inf)\b", re.I)
_COLLAPSE = re.compile(r"(?:<\*>[ \t:./,]*){2,}")


def _repl(m: re.Match[str]) -> str:
    s = m.group(0)
    if s[0] in " \t":
        return " "
    return "<*>"


def mask_line(text: str) -> str:
    """Template of one line (same result as `mask_batch([text])[0]`)."""
    return _COLLAPSE.sub("<*> ", _MASK.sub(_repl, text[: MAX_TEMPLATE_CHARS * 2]))[:MAX_TEMPLATE_CHARS].strip()


def mask_batch(lines: list[str]) -> list[str]:
    """Templates of many lines with one regex pass over the joined text."""
    if not lines:
        return []
    joined = "\n".join(s[: MAX_TEMPLATE_CHARS * 2] if len(s) > MAX_TEMPLATE_CHARS * 2 else s for s in lines)
    masked = _COLLAPSE.sub("<*> ", _MASK.sub(_repl, joined)).split("\n")
    if len(masked) != len(lines):  # a line with an embedded \n cannot happen, but be safe
        return [mask_line(s) for s in lines]
    return [t[:MAX_TEMPLATE_CHARS].strip() for t in masked]


def numeric_tokens(text: str) -> list[str]:
    """The numbers of a line, in order (used by LLM field mappings: field -> token index)."""
    return [m.group(0) for m in _NUM_TOKEN.finditer(text)]
