"""Reading logs that are hostile to naive readers, forward or backward, in bounded memory.

Text and line breaks are exactly those of `split_lines(clean_text(whole_file))` (see
`schedmate.logio.text`), however the file is cut into chunks. Reading is done in large
chunks, decoded, cleaned and split in C a chunk at a time.

Long lines: a line longer than `max_line_chars` keeps its first `max_line_chars`
characters (of the cleaned text) and the rest is skipped as it streams past, never held
whole: a 100 MB line without a break costs no more memory than a chunk plus the kept
head. The head is kept, not the tail, because that is where a line says what it is.
"""

from __future__ import annotations

import codecs
import dataclasses
import gc
import os
import re
import stat
from collections import deque
from collections.abc import Callable, Iterator
from itertools import repeat
from pathlib import Path
from typing import BinaryIO

from schedmate.core.errors import InputError
from schedmate.core.types import LogLine
from schedmate.logio.encoding import utf16_encoding
from schedmate.logio.text import IncrementalCleaner, LineSplitter, clean_text, split_lines

__all__ = [
    "DEFAULT_MAX_LINE_CHARS",
    "CHUNK_BYTES",
    "clean_text",
    "split_lines",
    "open_log",
    "sniff_text",
    "iter_text_blocks",
    "iter_line_batches",
    "iter_lines",
    "iter_lines_reverse",
]

DEFAULT_MAX_LINE_CHARS = 1024 * 1024
CHUNK_BYTES = 1024 * 1024  # faster than 4 MiB (the chunk's text stays in cache) and 4x less memory
REVERSE_BLOCK_BYTES = 1024 * 1024
SNIFF_BYTES = 64 * 1024
BINARY_RATIO = 0.30

# -- opening and validating --------------------------------------------------------------------

# bytes that do not occur in text; \b, \t, \n, \v, \f, \r and ESC do (progress bars, colours)
_CONTROL = bytes([*range(1, 8), *range(14, 27), *range(28, 32), 127])
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROL)
_SURROGATE = re.compile("[\udc80-\udcff]")
_LEGACY = ("gb18030", "big5", "shift_jis", "euc_kr")  # whole logs in a legacy CJK encoding are text
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed; decompress it first"),
    (b"BZh", "bzip2-compressed; decompress it first"),
    (b"\xfd7zXZ\x00", "xz-compressed; decompress it first"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed; decompress it first"),
    (b"PK\x03\x04", "a zip archive (or a PyTorch checkpoint), not a text log"),
    (b"\x7fELF", "an executable, not a text log"),
    (b"\x93NUMPY", "a NumPy array, not a text log"),
    (b"SQLite format 3\x00", "a SQLite database, not a text log"),
)


_NOT_REGULAR = "is not a regular file (a pipe or device); save the log to a file first"


def _open(path: Path) -> BinaryIO:
    """Open a regular file for reading; InputError naming the path otherwise."""
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path}: is a directory, not a log file")
        if not stat.S_ISREG(st.st_mode):  # checked before opening: opening a device can act on it
            raise InputError(f"{path}: {_NOT_REGULAR}")
        # non-blocking: a file that only looks regular (/proc/kmsg) answers EAGAIN instead of
        # waiting forever; ordinary files ignore the flag
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced between the check and the open
                raise InputError(f"{path}: {_NOT_REGULAR}")
            return os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a log file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot open: {exc.strerror or exc}") from None


def _binary_reason(head: bytes) -> str | None:
    """Why a file's first bytes are not text (None when they are)."""
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    enc = utf16_encoding(head)
    if enc is not None:
        # UTF-16 text: judge the characters, not the bytes (a CJK character's two bytes look
        # like control bytes once its NUL-free half is dropped)
        chars = head[: len(head) // 2 * 2].decode(enc, "replace")
        if not chars:
            return None
        bad = sum(1 for ch in chars if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f\x1b\x00\b\v"))
        ratio = bad / len(chars)
        return (
            f"looks binary ({ratio:.0%} of its first characters are not text)"
            if ratio > BINARY_RATIO
            else None
        )
    data = head.replace(b"\x00", b"")  # NUL padding is common in crashed or preallocated logs
    if not data:
        return None
    control = len(data.translate(None, _NOT_CONTROL))
    decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")
    undecodable = len(_SURROGATE.findall(decoder.decode(data, False)))
    if undecodable and (control + undecodable) / len(data) > BINARY_RATIO:
        for enc in _LEGACY:
            try:
                codecs.getincrementaldecoder(enc)("strict").decode(data, False)
            except UnicodeDecodeError:
                continue
            undecodable = 0
            break
    ratio = (control + undecodable) / len(data)
    if ratio > BINARY_RATIO:
        size = f"{len(head) // 1024} KiB" if len(head) >= 1024 else f"{len(head)} bytes"
        return f"looks binary ({ratio:.0%} of its first {size} are not text)"
    return None


def open_log(path: str | Path) -> BinaryIO:
    """Open a log for binary reading after checking it is a readable, text-like file.

    Raises InputError with a one-line message naming the path when it is missing, a
    directory (or pipe/device), unreadable, or binary: more than 30% of its first 64 KiB
    (NUL bytes aside) are control bytes or bytes that decode neither as UTF-8 nor as a
    legacy CJK encoding.
    """
    p = Path(path)
    fh = _open(p)
    try:
        head = fh.read(SNIFF_BYTES)
        if head is None:
            raise InputError(f"{p}: gives no data without waiting (a kernel or device file, not a log)")
        reason = _binary_reason(head)
        if reason is not None:
            raise InputError(f"{p}: {reason}")
        fh.seek(0)
    except BlockingIOError:
        fh.close()
        raise InputError(f"{p}: gives no data without waiting (a kernel or device file, not a log)") from None
    except OSError as exc:
        fh.close()
        raise InputError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except BaseException:
        fh.close()
        raise
    return fh


def sniff_text(path: str | Path) -> None:
    """Raise InputError (one line, naming the file) unless `path` is a readable text log."""
    open_log(path).close()


# -- forward -----------------------------------------------------------------------------------


def _slot_setters() -> tuple[Callable[[LogLine, int], None], Callable[[LogLine, str], None]] | None:
    """Setters of LogLine's two slots, when filling them is all its __init__ does."""
    try:
        names = [f.name for f in dataclasses.fields(LogLine)]
        set_no, set_text = vars(LogLine)["no"].__set__, vars(LogLine)["text"].__set__
        if names != ["no", "text"] or hasattr(LogLine, "__post_init__"):
            return None
        probe = object.__new__(LogLine)
        set_no(probe, 7)
        set_text(probe, "x")
        return (set_no, set_text) if probe == LogLine(7, "x") else None
    except (AttributeError, TypeError):
        return None


_SETTERS = _slot_setters()


def _make_lines(first_no: int, texts: list[str]) -> list[LogLine]:
    """LogLines numbered from `first_no`, built at C speed.

    Creating these objects is the largest cost of reading, so (1) while LogLine's __init__
    only fills its two slots, the slots are filled by `map` over the slot descriptors
    (136 vs 285 ns a line), and (2) the cyclic GC is paused meanwhile: the batch creates
    no cycles, and GC passes over the new objects would cost more than creating them.
    """
    enabled = gc.isenabled()
    if enabled:
        gc.disable()
    try:
        if _SETTERS is None:
            return [LogLine(n, s) for n, s in enumerate(texts, first_no)]
        lines: list[LogLine] = list(map(object.__new__, repeat(LogLine, len(texts))))
        deque(map(_SETTERS[0], lines, range(first_no, first_no + len(texts))), maxlen=0)
        deque(map(_SETTERS[1], lines, texts), maxlen=0)
        return lines
    finally:
        if enabled:
            gc.enable()


def _pieces(path: str | Path, chunk_bytes: int, max_line_chars: int) -> Iterator[tuple[str, str | None]]:
    """(head, long line) pairs of `LineSplitter` over the whole file, the last line included."""
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be >= 1")
    cleaner = IncrementalCleaner()
    splitter = LineSplitter(max_line_chars)
    with _open(Path(path)) as fh:
        while chunk := fh.read(chunk_bytes):
            head, long_line = splitter.feed(cleaner.feed(chunk))
            if head or long_line is not None:
                yield head, long_line
    head, long_line = splitter.feed(cleaner.feed(b"", final=True))
    if long_line is None:
        long_line = splitter.finish()  # the last line, when the file does not end with a break
    if head or long_line is not None:
        yield head, long_line


def iter_text_blocks(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[str]:
    """Cleaned text of whole lines, about a chunk at a time (the fast path for bulk work).

    Each block holds complete lines, each ending with its break (`\\n`, `\\r` or `\\r\\n`;
    a block never ends with a bare `\\r`), except possibly the file's very last line. The lines of
    the file are `split_lines` of each block in turn, or of the blocks joined. No line in a
    block is longer than `max_line_chars`.
    """
    for head, long_line in _pieces(path, chunk_bytes, max_line_chars):
        if head.endswith("\r"):
            head += "\n"  # the same single break, and blocks stay safe to join
        if head:
            yield head
        if long_line is not None:
            yield long_line + "\n"


def iter_line_batches(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[list[LogLine]]:
    """Lines of a file, forward, in batches (about one per chunk), numbered from 1.

    Memory is bounded by a few chunks plus `max_line_chars`, whatever the file size.
    """
    if chunk_bytes < 1:
        raise ValueError("chunk_bytes must be >= 1")
    cleaner = IncrementalCleaner()
    splitter = LineSplitter(max_line_chars)
    no = 1
    with _open(Path(path)) as fh:
        while chunk := fh.read(chunk_bytes):
            texts = splitter.feed_lines(cleaner.feed(chunk))
            if texts:
                yield _make_lines(no, texts)
                no += len(texts)
    texts = splitter.feed_lines(cleaner.feed(b"", final=True))
    last = splitter.finish()
    if last is not None:
        texts.append(last)
    if texts:
        yield _make_lines(no, texts)


def iter_lines(
    path: str | Path,
    *,
    chunk_bytes: int = CHUNK_BYTES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[LogLine]:
    """Lines of a file, forward, one at a time (see `iter_line_batches`)."""
    for batch in iter_line_batches(path, chunk_bytes=chunk_bytes, max_line_chars=max_line_chars):
        yield from batch


# -- backward ----------------------------------------------------------------------------------

_BREAK_BYTE = re.compile(rb"[\r\n]")


def _cr_pairs_at(fh: BinaryIO, cr: int) -> bool:
    """True when the `\\r` at file offset `cr` is followed, once cleaned, by `\\n`."""
    cleaner = IncrementalCleaner()
    pos = cr + 1
    size = 4096
    while True:
        fh.seek(pos)
        raw = fh.read(size)
        text = cleaner.feed(raw, final=not raw)
        if text:
            return text[0] == "\n"
        if not raw:
            return False
        pos += len(raw)
        size = min(size * 2, REVERSE_BLOCK_BYTES)


def _first_line_start(buf: bytes) -> int:
    """Index just past the first line break in `buf` (-1 if it holds none).

    A `\\r` ends a line unless, once cleaned, a `\\n` follows it (escape codes or NULs may
    sit between them). `buf` must end where a line starts (or at EOF), so a `\\r` with
    no break after it in `buf` is final.
    """
    m = _BREAK_BYTE.search(buf)
    if m is None:
        return -1
    i = m.start()
    if buf[i] == 0x0A:
        return i + 1
    nxt = buf[i + 1 : i + 2]
    if nxt == b"\n":
        return i + 2
    if nxt not in (b"\x1b", b"\x00"):
        return i + 1  # a visible character (or nothing) follows: the \r ends a line on its own
    m2 = _BREAK_BYTE.search(buf, i + 1)
    if m2 is not None and buf[m2.start()] == 0x0A and clean_text(buf[i + 1 : m2.start()]) == "":
        return m2.start() + 1  # only escape codes or NULs between \r and \n: one break
    return i + 1


def _last_line_start(buf: bytes, fh: BinaryIO, base: int) -> int:
    """Index just past the last line break in `buf` (-1 if it holds none); the bytes
    after `buf` in the file belong to one line, so a final `\\r` is looked up there."""
    k = max(buf.rfind(b"\n"), buf.rfind(b"\r"))
    if k < 0 or buf[k] == 0x0A:
        return k + 1 if k >= 0 else -1
    nxt = buf[k + 1 : k + 2]
    if (nxt and nxt not in (b"\x1b", b"\x00")) or not _cr_pairs_at(fh, base + k):
        return k + 1
    # this \r and a \n further on are one break; the break before it ends the previous line
    # (a \r there is final: the next break, this \r, is not a \n)
    k = max(buf.rfind(b"\n", 0, k), buf.rfind(b"\r", 0, k))
    return k + 1 if k >= 0 else -1


def _line_head(fh: BinaryIO, start: int, end: int, max_line_chars: int) -> str | None:
    """The text of the one line stored in file bytes [start, end) (with its break), read
    forward and cut at `max_line_chars`; None when it is an unterminated, empty last line."""
    cleaner = IncrementalCleaner()
    splitter = LineSplitter(max_line_chars)
    pos = start
    final = False
    while not final:
        fh.seek(pos)
        raw = fh.read(min(REVERSE_BLOCK_BYTES, end - pos))
        pos += len(raw)
        final = not raw or pos >= end
        head, long_line = splitter.feed(cleaner.feed(raw, final=final))
        if head:
            return split_lines(head)[0][:max_line_chars]
        if long_line is not None:
            return long_line
    return splitter.finish()


_MAX_HOLES = 4096


def _holes(fh: BinaryIO, size: int) -> list[tuple[int, int]]:
    """The holes of a sparse file, (start, end) in file order (empty when the file system
    cannot tell or the file has too many to list)."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        return []
    fd = fh.fileno()
    out: list[tuple[int, int]] = []
    pos = 0
    try:
        while pos < size and len(out) < _MAX_HOLES:
            hole = os.lseek(fd, pos, seek_hole)
            if hole >= size:
                break
            try:
                data = os.lseek(fd, hole, seek_data)
            except OSError:  # ENXIO: no data after the hole
                data = size
            out.append((hole, min(data, size)))
            pos = data
    except OSError:
        return []
    finally:
        fh.seek(0, os.SEEK_END)
    return [] if len(out) >= _MAX_HOLES else out


def iter_lines_reverse(
    path: str | Path,
    *,
    block_bytes: int = REVERSE_BLOCK_BYTES,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
) -> Iterator[str]:
    """Lines from the last to the first, reading blocks backwards (stop early on big logs).

    Yields exactly the texts of `iter_lines(path)`, reversed. Memory is bounded by the
    block size plus about 4 x `max_line_chars` bytes: a longer line is not kept while
    reading back to its start; its head is then read forward from there.
    """
    if block_bytes < 1:
        raise ValueError("block_bytes must be >= 1")
    keep_limit = 4 * max_line_chars + 8
    with _open(Path(path)) as fh:
        pos = fh.seek(0, os.SEEK_END)
        holes = _holes(fh, pos)
        kept = b""  # the start of lines not yet yielded: file bytes [pos, kept_end), NULs skipped
        kept_end = pos
        long_end = -1  # >= 0: bytes [pos, long_end) lie in one line too long to keep
        while pos > 0:
            # NUL bytes are no text (clean_text drops them): a sparse file's holes and blocks of
            # NULs (a preallocated or crashed log) are passed over without keeping them
            while holes and holes[-1][0] >= pos:
                holes.pop()
            if holes and holes[-1][1] >= pos:
                pos = holes.pop()[0]
                continue
            start = max(0, pos - block_bytes)
            if holes and holes[-1][1] > start:
                start = holes[-1][1]  # read only the data after the hole below
            fh.seek(start)
            block = fh.read(pos - start)
            pos = start
            if block.count(0) == len(block):
                continue
            if long_end >= 0:
                c = _last_line_start(block, fh, start)
                if c < 0 and start == 0:
                    c = 0
                if c >= 0:
                    text = _line_head(fh, start + c, long_end, max_line_chars)
                    if text is not None:
                        yield text
                    kept, long_end = block[:c], -1
                    kept_end = start + c
                continue
            buf_end = kept_end if kept else start + len(block)
            buf = block + kept if kept else block
            c = _first_line_start(buf) if start > 0 else 0  # kept ends where a line starts
            if c < 0 or c == len(buf):
                kept, kept_end = buf, buf_end
                if len(kept) > keep_limit:
                    kept, long_end = b"", buf_end
                continue
            lines = split_lines(clean_text(buf[c:]))
            kept = buf[:c]
            kept_end = start + c if c <= len(block) else buf_end - (len(buf) - c)
            for s in reversed(lines):
                yield s if len(s) <= max_line_chars else s[:max_line_chars]
        if long_end >= 0:  # a too-long line that starts the file (its first bytes were NULs)
            text = _line_head(fh, 0, long_end, max_line_chars)
            if text is not None:
                yield text
        if kept:  # the lines before a too-long line that started in the first block
            for s in reversed(split_lines(clean_text(kept))):
                yield s if len(s) <= max_line_chars else s[:max_line_chars]
