"""One parsed line as {role: value}, for the tracker's line-level tests."""

from __future__ import annotations

from schedmate.tracker.parse import parse_line


def vals(line: str) -> dict[str, float]:
    return {k: v[1] for k, v in parse_line(line).values.items()}
