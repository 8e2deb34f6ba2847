"""The input-limits layer (`schedmate.core.inputs`), under its short public name."""

from schedmate.core.inputs import (
    MAX_CONFIG_BYTES,
    MAX_SOURCE_BYTES,
    MAX_TABLE_BYTES,
    Deadline,
    check_regular,
    open_regular,
    read_bytes,
    read_text,
)

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_SOURCE_BYTES",
    "MAX_TABLE_BYTES",
    "Deadline",
    "check_regular",
    "open_regular",
    "read_bytes",
    "read_text",
]
