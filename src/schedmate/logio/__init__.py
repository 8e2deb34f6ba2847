"""Robust log reading: any bytes, `\\r` bars, huge lines, reverse reading, following."""

from schedmate.logio.follow import follow_lines
from schedmate.logio.reader import (
    DEFAULT_MAX_LINE_CHARS,
    clean_text,
    iter_line_batches,
    iter_lines,
    iter_lines_reverse,
    iter_text_blocks,
    sniff_text,
    split_lines,
)

__all__ = [
    "DEFAULT_MAX_LINE_CHARS",
    "clean_text",
    "follow_lines",
    "iter_line_batches",
    "iter_lines",
    "iter_lines_reverse",
    "iter_text_blocks",
    "sniff_text",
    "split_lines",
]
