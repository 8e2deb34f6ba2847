"""Error hierarchy. Every error carries a one-line, user-facing message naming the place."""

from __future__ import annotations

__all__ = [
    "SchedmateError",
    "ConfigError",
    "InputError",
    "BackendError",
    "BackendUnavailable",
    "ReplyValidationError",
]


class SchedmateError(Exception):
    """Base of all errors schedmate reports to users (CLI prints `str(err)` only)."""


class ConfigError(SchedmateError):
    """Settings are missing, malformed or invalid (names the file/variable/field)."""


class InputError(SchedmateError):
    """User-provided input (a log file, a trace, a job directory) cannot be used."""


class BackendError(SchedmateError):
    """An external backend (LLM server, embedding server, cluster) failed."""


class BackendUnavailable(BackendError):
    """The backend is down or its circuit breaker is open; callers degrade to rules."""


class ReplyValidationError(BackendError):
    """A model reply did not match the requested schema after all retries."""
