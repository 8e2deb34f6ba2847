"""The public JSON contracts the tests pin (one copy each, so two tests cannot drift apart)."""

from __future__ import annotations

# `track --json` / TrackResult.to_json_dict(): exactly these keys, in every mode
TRACK_JSON_KEYS = frozenset(
    {
        "schema_version",
        "events",
        "log_eta_s",
        "file",
        "has_progress",
        "last_progress_line",
        "step",
        "total_steps",
        "epoch",
        "loss",
        "step_time_s",
        "throughput",
        "progress",
        "eta_s",
        "error",
    }
)
