"""Robust log reading: any bytes, `\\r` bars, huge lines, reverse reading, following.

Every capability reads logs through this layer, so all of them agree on what a line is:
`split_lines(clean_text(file_bytes))` (NUL dropped, UTF-8 with replacement, ANSI escapes
stripped; `\\n`, `\\r` and `\\r\\n` end a line), computed in bounded memory.
"""

from schedmate.logio.encoding import MAX_DECODED_BYTES, detect_encoding, read_decoded_lines, read_decoded_tail
from schedmate.logio.follow import follow_batches, follow_lines
from schedmate.logio.reader import (
    DEFAULT_MAX_LINE_CHARS,
    iter_line_batches,
    iter_lines,
    iter_lines_reverse,
    iter_text_blocks,
    open_log,
    sniff_text,
)
from schedmate.logio.text import IncrementalCleaner, LineSplitter, clean_text, count_breaks, split_lines

__all__ = [
    "DEFAULT_MAX_LINE_CHARS",
    "IncrementalCleaner",
    "LineSplitter",
    "clean_text",
    "count_breaks",
    "detect_encoding",
    "MAX_DECODED_BYTES",
    "read_decoded_lines",
    "read_decoded_tail",
    "follow_batches",
    "follow_lines",
    "iter_line_batches",
    "iter_lines",
    "iter_lines_reverse",
    "iter_text_blocks",
    "open_log",
    "sniff_text",
    "split_lines",
]
