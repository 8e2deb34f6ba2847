"""Domain types, errors and settings. No I/O beyond reading a config file."""

from schedmate.core.errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    InputError,
    ReplyValidationError,
    SchedmateError,
)
from schedmate.core.settings import (
    EmbedderSettings,
    LLMSettings,
    Settings,
    TrackerSettings,
    load_settings,
)
from schedmate.core.types import (
    FailureReport,
    LineKind,
    LogLine,
    ProgressSample,
    RecoveryAction,
    Throughput,
    TrackEvent,
    TrackResult,
)

__all__ = [
    "BackendError",
    "BackendUnavailable",
    "ConfigError",
    "EmbedderSettings",
    "FailureReport",
    "RecoveryAction",
    "InputError",
    "LLMSettings",
    "LineKind",
    "LogLine",
    "ProgressSample",
    "ReplyValidationError",
    "SchedmateError",
    "Settings",
    "Throughput",
    "TrackEvent",
    "TrackResult",
    "TrackerSettings",
    "load_settings",
]
