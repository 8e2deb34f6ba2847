"""The SDK: the operations the CLI, `watch` and the REST service call (CLI -> SDK -> capabilities).

Each capability has a module here that builds its facade from validated settings, with
backends chosen by name. Names are resolved lazily so that importing the SDK (and the CLI's
`--help`) does not import every capability and its heavy dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, typed, for checkers; at run time they load on first use
    from schedmate.sdk.advising import advisor_store_path, build_advisor
    from schedmate.sdk.failures import build_failure_handler
    from schedmate.sdk.tracking import build_tracker, save_tracker_state, track_files

# public name -> module under schedmate.sdk that defines it
_EXPORTS: dict[str, str] = {
    "build_tracker": "tracking",
    "track_files": "tracking",
    "save_tracker_state": "tracking",
    "build_failure_handler": "failures",
    "advisor_store_path": "advising",
    "build_advisor": "advising",
}

__all__ = [
    "advisor_store_path",
    "build_advisor",
    "build_failure_handler",
    "build_tracker",
    "save_tracker_state",
    "track_files",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'schedmate.sdk' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"schedmate.sdk.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
