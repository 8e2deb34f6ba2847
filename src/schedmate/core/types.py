"""Frozen domain types shared by every capability. No I/O here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from schedmate.core.diagnosis import FailureReport, RecoveryAction  # re-exported

# Every --json record and stored JSON document carries this; bump it on an incompatible change.
SCHEMA_VERSION = 1

__all__ = [
    "SCHEMA_VERSION",
    "LineKind",
    "LogLine",
    "Throughput",
    "ProgressSample",
    "TrackEvent",
    "TrackResult",
    "RecoveryAction",
    "FailureReport",
]


class LineKind(StrEnum):
    """What a log line is about, as far as a scheduler cares."""

    PROGRESS = "progress"
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a log: 1-based number (splitting on \\n and \\r) and decoded text."""

    no: int
    text: str


@dataclass(frozen=True, slots=True)
class Throughput:
    value: float
    unit: str

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "unit": self.unit}


@dataclass(frozen=True, slots=True)
class ProgressSample:
    """Metrics read from one progress line (fields the line does not state are None)."""

    line_no: int
    text: str
    step: int | None = None
    total_steps: int | None = None
    epoch: float | None = None
    total_epochs: int | None = None
    loss: float | None = None
    loss_is_nan: bool = False
    step_time_s: float | None = None
    throughput: Throughput | None = None
    lr: float | None = None
    elapsed_s: float | None = None
    remaining_s: float | None = None
    timestamp: float | None = None
    is_eval: bool = False
    summary: bool = False  # an end-of-epoch / end-of-run report (final, best, done...)
    # a counter line whose metrics are all evaluation metrics (boosting rounds scored on a
    # validation set only): training progress when the log shows no other
    eval_metrics_only: bool = False
    # the step time is a bare `time`/`duration` of the line (no per-step unit or key): on a
    # line of an epoch-only record it is the epoch's duration
    step_time_generic: bool = False

    def has_metrics_besides_counters(self) -> bool:
        return self.loss_is_nan or any(
            v is not None for v in (self.loss, self.step_time_s, self.throughput, self.lr, self.remaining_s)
        )

    def has_metrics(self) -> bool:
        return (
            any(v is not None for v in (self.step, self.loss, self.step_time_s, self.throughput, self.epoch))
            or self.loss_is_nan
        )


@dataclass(frozen=True, slots=True)
class TrackEvent:
    """Something a scheduler may act on: `slowdown` (cancel GPU packing), `stall`, `recovered`."""

    kind: str
    line_no: int
    message: str
    ratio: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "line_no": self.line_no,
            "message": self.message,
            "ratio": _num(self.ratio),
        }


def _num(x: float | None) -> float | None:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return None
    return x


@dataclass(frozen=True, slots=True)
class TrackResult:
    """The tracker's answer for one log file (the `track --json` contract)."""

    file: str
    has_progress: bool = False
    last_progress_line: str | None = None
    last_progress_line_no: int | None = None
    step: int | None = None
    total_steps: int | None = None
    epoch: float | None = None
    loss: float | None = None
    loss_is_nan: bool = False
    step_time_s: float | None = None
    throughput: Throughput | None = None
    lr: float | None = None
    progress: float | None = None
    eta_s: float | None = None
    events: tuple[TrackEvent, ...] = field(default_factory=tuple)
    error: str | None = None
    log_eta_s: float | None = None  # the ETA the log prints itself, beside ours

    def to_json_dict(self) -> dict[str, Any]:
        """Exactly the keys of the public `track --json` contract (`events` always present)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "file": self.file,
            "has_progress": self.has_progress,
            "last_progress_line": self.last_progress_line,
            "step": self.step,
            "total_steps": self.total_steps,
            "epoch": _num(self.epoch),
            "loss": _num(self.loss),
            "step_time_s": _num(self.step_time_s),
            "throughput": self.throughput.to_dict() if self.throughput else None,
            "progress": _num(self.progress),
            "eta_s": _num(self.eta_s),
            "log_eta_s": _num(self.log_eta_s),
            "events": [e.to_dict() for e in self.events],
            "error": self.error,
        }
