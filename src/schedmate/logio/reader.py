"""Reading logs that are hostile to naive readers, in bounded memory.

Any bytes decode (NUL bytes are dropped first, invalid UTF-8 becomes U+FFFD, ANSI escape
sequences are stripped within each line); a line ends at `\\n`, `\\r` (progress bars redraw with it) or `\\r\\n` (one
break). Reading is done in large chunks cut at line breaks, so decoding and splitting run
in C over megabytes at a time. A line longer than `max_line_chars` keeps its first
`max_line_chars` characters; the rest is skipped without ever being held whole, so a
100 MB line with no break costs no more memory than a short one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from schedmate.core.errors import InputError
from schedmate.core.types import LogLine

__all__ = [
    "clean_text",
    "split_lines",
    "iter_line_batches",
    "iter_text_blocks",
    "iter_lines",
    "iter_lines_reverse",
    "sniff_text",
    "DEFAULT_MAX_LINE_CHARS",
]

DEFAULT_MAX_LINE_CHARS = 1024 * 1024
CHUNK_BYTES = 4 * 1024 * 1024

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_]|\(.|\)?)")
_BREAK = re.compile(r"\r\n|\r|\n")
_BREAK_B = re.compile(rb"\r\n|\r|\n")
# on raw bytes, a \r and a \n with only escape codes (or NULs) between them are ONE break,
# exactly as they are after cleaning
_BREAK_RAW = re.compile(rb"\r(?:\x1b\[[0-?]*[ -/]*[@-~]|\x00)*\n|\r|\n")


def clean_text(raw: bytes) -> str:
    """Decode any bytes: UTF-8 with replacement, NUL dropped, ANSI escapes stripped."""
    if b"\x00" in raw:
        raw = raw.replace(b"\x00", b"")
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def split_lines(text: str) -> list[str]:
    """Split on \\n, \\r and \\r\\n; a trailing empty segment is not a line."""
    lines = _BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _open(path: Path):  # type: ignore[no-untyped-def]
    try:
        return path.open("rb")
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a log file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None


def sniff_text(path: str | Path, sample_bytes: int = 64 * 1024) -> None:
    """Raise InputError (one line, naming the file) unless `path` is a readable text log."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{p}: is a directory, not a log file")
    with _open(p) as fh:
        head = fh.read(sample_bytes)
    data = head.replace(b"\x00", b"")  # NUL padding is common in crashed logs
    if not data:
        return
    ctrl = sum(1 for b in data if (b < 9 or 13 < b < 32) and b != 27)
    if ctrl / len(data) > 0.1:
        raise InputError(f"{p}: looks binary ({ctrl / len(data):.0%} control bytes), not a text log")
    bad = data.decode("utf-8", "replace").count("\ufffd")
    if bad / len(data) > 0.2:
        try:
            data.decode("gb18030")  # a whole log in a legacy CJK encoding is still text
        except UnicodeDecodeError:
            raise InputError(f"{p}: looks binary ({bad / len(data):.0%} undecodable bytes), not a text log") from None


_LEAD = re.compile(rb"(?:\x1b\[[0-?]*[ -/]*[@-~]|\x00)*")


def _may_pair(buf: bytes, i: int) -> bool:
    """True when only escape codes precede the \n at `i` in buf (a \r may come before)."""
    return _LEAD.fullmatch(buf, 0, i) is not None


_PARTIAL_TAIL = re.compile(rb"(?:\x1b\[[0-?]*[ -/]*[@-~])*(?:\x1b(?:\[[0-?]*[ -/]*)?)?")


def _last_break(buf: bytes) -> int:
    """Index just past the last line break. A final \r followed only by (partial) escape
    codes is held back: a \n in the next chunk would make it one \r\n break."""
    i = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
    if i >= 0 and buf[i] == 0x0D and _PARTIAL_TAIL.fullmatch(buf, i + 1) is not None:
        i = max(buf.rfind(b"\n", 0, i), buf.rfind(b"\r", 0, i))
    return i + 1 if i >= 0 else -1


def iter_text_blocks(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[str]:
    """Cleaned text of whole lines, a chunk at a time (the fast path for bulk work).

    Each block holds complete lines ending with their break (`\n`, `\r`, `\r\n`), except
    possibly the file's last line. An over-long line comes as its own block, truncated.
    Callers that split blocks must use `split_lines` semantics.
    """
    p = Path(path)
    max_bytes = max_line_chars * 4  # a UTF-8 char is at most 4 bytes
    carry = b""
    skipping = False  # inside an over-long line whose head was already emitted
    drop_lf = False  # the previous chunk ended with the \r that ended a skipped line
    with _open(p) as fh:
        while chunk := fh.read(chunk_bytes):
            if drop_lf and chunk[:1] == b"\n":
                chunk = chunk[1:]
            drop_lf = False
            if skipping:
                m = _BREAK_B.search(chunk)
                if m is None:
                    continue
                drop_lf = m.group(0) == b"\r" and m.end() == len(chunk)
                chunk = chunk[m.end():]
                skipping = False
            if b"\x00" in chunk:
                chunk = chunk.replace(b"\x00", b"")  # before cutting: NUL may sit inside \r\n
            data = carry + chunk if carry else chunk
            cut = _last_break(data)
            if cut > 0:
                yield clean_text(data[:cut])
                carry = data[cut:]
            else:
                carry = data
            if len(carry) > max_bytes:
                yield clean_text(carry[:max_bytes])[:max_line_chars] + "\n"
                carry = b""
                skipping = True
    if carry and not skipping:
        yield clean_text(carry)


def iter_line_batches(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[list[LogLine]]:
    """Lines of a file, forward, in batches (about one per chunk), numbered from 1."""
    no = 0
    for block in iter_text_blocks(path, chunk_bytes=chunk_bytes, max_line_chars=max_line_chars):
        lines = split_lines(block)
        if len(block) > max_line_chars:
            lines = [s if len(s) <= max_line_chars else s[:max_line_chars] for s in lines]
        if lines:
            yield [LogLine(no + i, s) for i, s in enumerate(lines, 1)]
            no += len(lines)


def iter_lines(path: str | Path, **kwargs: int) -> Iterator[LogLine]:
    for batch in iter_line_batches(path, **kwargs):
        yield from batch


def iter_lines_reverse(
    path: str | Path,
    *,
    block_bytes: int = 1024 * 1024,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[str]:
    """Lines from the last to the first, reading blocks backwards (stop early on big logs).

    The unread part always ends right after a line break (or at EOF), so each block's
    complete lines split exactly as forward reading splits them. An over-long line keeps
    its first `max_line_chars` characters, as forward reading does.
    """
    p = Path(path)
    max_bytes = max_line_chars * 4
    with _open(p) as fh:
        pos = fh.seek(0, os.SEEK_END)
        partial = b""  # the earliest bytes seen of a line whose start is not read yet
        term = b""  # the break that ends `partial` (empty at EOF)
        while pos > 0:
            start = max(0, pos - block_bytes)
            fh.seek(start)
            block = fh.read(pos - start).replace(b"\x00", b"")
            pos = start
            buf = block + partial + term
            if pos == 0:
                lines = split_lines(clean_text(buf))
            else:
                limit = len(block) + len(partial)  # a break must start before the known term
                m = _BREAK_RAW.search(buf, 0, limit + len(term))
                while m is not None and m.group(0)[:1] != b"\r" and _may_pair(buf, m.start()):
                    m = _BREAK_RAW.search(buf, m.end(), limit + len(term))  # may pair with an earlier \r
                if m is None or m.start() >= limit:
                    partial = buf[:limit]
                    if len(partial) > max_bytes:
                        partial = partial[:max_bytes]  # keep only the earliest bytes of a huge line
                    continue
                lines = split_lines(clean_text(buf[m.end():]))
                partial, term = buf[: m.start()], buf[m.start(): m.end()]
            for s in reversed(lines):
                yield s if len(s) <= max_line_chars else s[:max_line_chars]
