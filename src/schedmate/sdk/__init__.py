"""The SDK: the operations the CLI, `watch` and the REST service call (CLI -> SDK -> capabilities).

Each capability has a module here that builds its facade from validated settings, with
backends chosen by name. Names are resolved lazily so that importing the SDK (and the CLI's
`--help`) does not import every capability and its heavy dependencies.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names, typed, for checkers; at run time they load on first use
    from schedmate.sdk.advising import (
        HistoryStats,
        advise,
        advisor_store_path,
        build_advisor,
        history_stats,
        import_history,
        job_from_code,
        read_batch,
    )
    from schedmate.sdk.failures import (
        audit_log_path,
        build_failure_handler,
        diagnose_logs,
        job_context,
        recover_job,
    )
    from schedmate.sdk.live import LivePrediction, live_report, predict_live
    from schedmate.sdk.sim import SimulationReport, StartPrediction, predict_starts, predict_trace, simulate
    from schedmate.sdk.slurm import slurm_status
    from schedmate.sdk.tracking import (
        LineVerdict,
        build_tracker,
        classify_lines,
        save_tracker_state,
        track_files,
    )
    from schedmate.sdk.watch import build_watcher, job_report, run_watch

# public name -> module under schedmate.sdk that defines it
_EXPORTS: dict[str, str] = {
    "build_tracker": "tracking",
    "track_files": "tracking",
    "save_tracker_state": "tracking",
    "classify_lines": "tracking",
    "LineVerdict": "tracking",
    "build_failure_handler": "failures",
    "diagnose_logs": "failures",
    "recover_job": "failures",
    "job_context": "failures",
    "audit_log_path": "failures",
    "advisor_store_path": "advising",
    "build_advisor": "advising",
    "advise": "advising",
    "import_history": "advising",
    "history_stats": "advising",
    "job_from_code": "advising",
    "read_batch": "advising",
    "HistoryStats": "advising",
    "simulate": "sim",
    "predict_starts": "sim",
    "predict_trace": "sim",
    "SimulationReport": "sim",
    "StartPrediction": "sim",
    "predict_live": "live",
    "live_report": "live",
    "LivePrediction": "live",
    "build_watcher": "watch",
    "run_watch": "watch",
    "job_report": "watch",
    "slurm_status": "slurm",
}

__all__ = [
    "HistoryStats",
    "LineVerdict",
    "LivePrediction",
    "SimulationReport",
    "StartPrediction",
    "advise",
    "advisor_store_path",
    "audit_log_path",
    "build_advisor",
    "build_failure_handler",
    "build_tracker",
    "build_watcher",
    "classify_lines",
    "diagnose_logs",
    "history_stats",
    "import_history",
    "job_context",
    "job_from_code",
    "job_report",
    "live_report",
    "predict_live",
    "predict_starts",
    "predict_trace",
    "read_batch",
    "recover_job",
    "run_watch",
    "save_tracker_state",
    "simulate",
    "slurm_status",
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
