"""Config files that inherit from others: mmengine `_base_`, detectron2/yacs `_BASE_`.

The child is merged over its bases recursively (a child dict with `_delete_: True` replaces
its base instead), bases are read relative to the child and only inside the job directory,
and the chain is bounded in depth and files. Unreadable or missing bases become notes.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schedmate.advisor.extract.configs import Flat, flatten, load_data
from schedmate.advisor.extract.paths import inside

__all__ = ["load_inherited", "deep_merge", "BASE_KEYS"]

BASE_KEYS = ("_base_", "_BASE_", "__base__")
_MAX_DEPTH = 8
_MAX_FILES = 32


def deep_merge(base: Any, child: Any) -> Any:
    """`child` over `base`: mappings merge key by key, anything else is replaced."""
    if not isinstance(base, Mapping) or not isinstance(child, Mapping):
        return child
    if child.get("_delete_") is True:
        return {k: v for k, v in child.items() if k != "_delete_"}
    out = dict(base)
    for k, v in child.items():
        out[k] = deep_merge(out[k], v) if k in out else v
    return out


def _bases(data: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key in BASE_KEYS:
        val = data.get(key)
        if isinstance(val, str):
            out.append(val)
        elif isinstance(val, (list, tuple)):
            out.extend(v for v in val if isinstance(v, str))
    return out


def load_inherited(path: Path, root: Path) -> tuple[Flat, list[Path], list[str]]:
    """A config with everything it inherits, flattened; the files read (the config first) and notes."""
    used: list[Path] = []
    notes: list[str] = []
    base_root = root.resolve()

    def label(p: Path) -> str:
        try:
            return str(p.relative_to(base_root))
        except ValueError:
            return p.name

    def load(p: Path, depth: int, chain: tuple[Path, ...]) -> Any:
        used.append(p)
        data, err = load_data(p)
        if err:
            notes.append(f"{label(p)}: {err}")
        if not isinstance(data, Mapping):
            return data
        merged: Any = {}
        for rel in _bases(data):
            if depth >= _MAX_DEPTH or len(used) >= _MAX_FILES:
                notes.append(
                    f"{label(p)}: inheritance deeper than {_MAX_DEPTH} levels or {_MAX_FILES} files, "
                    f"{rel!r} not read"
                )
                continue
            if "://" in rel or rel.startswith("mmdet::") or "::" in rel:
                notes.append(f"{label(p)}: base {rel!r} is outside the job directory")
                continue
            bp = inside(base_root, p.parent / rel)
            if bp is None:
                notes.append(f"{label(p)}: base {rel!r} not found inside the job directory")
                continue
            if bp in chain:
                notes.append(f"{label(p)}: base {rel!r} inherits from itself")
                continue
            merged = deep_merge(merged, load(bp, depth + 1, (*chain, bp)))
        own = {k: v for k, v in data.items() if k not in BASE_KEYS}
        return deep_merge(merged, own)

    data = load(path.resolve(), 0, (path.resolve(),))
    return flatten(data), used, notes
