"""The latest checkpoint of a failed job: in its directory (bounded walk), else in its log."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path

__all__ = ["find_checkpoint"]

_CKPT_LINE = re.compile(
    r"(?:sav(?:e|ing|ed)|writ(?:e|ing|ten)|stor(?:e|ing|ed)).{0,80}?(?:checkpoint|ckpt|weights|model)"
    r"|(?:checkpoint|ckpt).{0,40}?(?:sav|writ|stor)",
    re.I,
)
_PATH = re.compile(
    r"(?:[A-Za-z]:\\|\.{0,2}/|~/)[^\s'\",;()]+|[\w.-]*(?:checkpoint|ckpt|global_step)[\w./-]*", re.I
)
_CKPT_NAME = re.compile(r"\.(?:ckpt|pt|pth|safetensors|distcp)$|^checkpoint-|^global_step", re.I)
_MAX_WALK = 50_000


def _step_of(name: str) -> int:
    nums = re.findall(r"\d+", name)
    return int(nums[-1]) if nums else -1


def _walk_checkpoints(root: Path) -> list[Path]:
    """Checkpoint files and directories under `root` (bounded walk, symlinks not followed)."""
    found: list[Path] = []
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            seen += 1
            if _CKPT_NAME.search(name) and not os.path.islink(os.path.join(dirpath, name)):
                found.append(Path(dirpath) / name)
        if seen > _MAX_WALK:
            break
    return found


def find_checkpoint(lines: Sequence[str], job_dir: str | None = None) -> str | None:
    """The latest checkpoint: in the job directory (newest step, then mtime), else the log."""
    if job_dir and Path(job_dir).is_dir():
        found = _walk_checkpoints(Path(job_dir))
        if found:

            def key(p: Path) -> tuple[int, float]:
                try:
                    return _step_of(p.name), p.stat().st_mtime
                except OSError:
                    return _step_of(p.name), 0.0

            return str(max(found, key=key))
    for line in reversed(lines):
        if _CKPT_LINE.search(line):
            paths = [
                p
                for p in _PATH.findall(line)
                if len(p) > 3 and ("/" in p or "\\" in p or "." in p or "-" in p)
            ]
            if paths:
                return str(paths[-1]).rstrip(".,;:)")
    return None
