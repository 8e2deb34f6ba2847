"""The one place the extractor turns strings from a job (command words, config values, shell
arguments) into paths and reads files. A string taken for a path may be anything: 10 kB long,
with NUL bytes, a FIFO's name, `/dev/zero`. Nothing here raises on such a string: `inside`
answers None, `read_source` raises `InputError` (one line naming the file) and never blocks.
"""

from __future__ import annotations

import os
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.inputs import read_bytes

__all__ = ["inside", "plausible_path", "read_source", "PATH_MAX", "NAME_MAX"]

PATH_MAX = 4096  # Linux PATH_MAX, in bytes
NAME_MAX = 255  # one path component, in bytes


def plausible_path(text: str | Path) -> bool:
    """Could `text` name a file at all (no NUL, within the OS's length limits)? Checked before
    any system call, so a shell argument string never reaches stat() as a path."""
    s = os.fspath(text)
    if not s or "\0" in s:
        return False
    try:
        raw = s.encode("utf-8", "surrogateescape")
    except UnicodeError:
        return False
    return len(raw) <= PATH_MAX and all(len(part) <= NAME_MAX for part in raw.split(b"/"))


def inside(root: Path, rel: str | Path) -> Path | None:
    """`rel` resolved under `root` when it stays inside (no `..` or symlink escape) and is a
    regular file; None for anything else, including strings that cannot be paths."""
    if not plausible_path(rel):
        return None
    try:
        base = root.resolve()
        p = Path(rel)
        cand = (p if p.is_absolute() else base / p).resolve()
        if not plausible_path(cand) or not cand.is_relative_to(base) or not cand.is_file():
            return None
    except (OSError, RuntimeError, ValueError):
        return None
    return cand


def read_source(path: Path, max_bytes: int, *, what: str = "file") -> str:
    """A job file as text (undecodable bytes replaced: code is read for hints, not executed).
    A FIFO, device or directory, or a file over `max_bytes`, is an `InputError`, never a hang."""
    if not plausible_path(path):
        raise InputError(f"{what} {str(path)[:80]!r}...: not a usable path")
    return read_bytes(path, what=what, max_bytes=max_bytes).decode("utf-8", errors="replace")
