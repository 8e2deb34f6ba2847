"""Follow a growing log (`tail -F` semantics): appends, `\\r` redraws, truncation, rotation."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

from schedmate.core.errors import InputError
from schedmate.core.types import LogLine
from schedmate.logio.reader import DEFAULT_MAX_LINE_CHARS, _make_lines, _open
from schedmate.logio.text import IncrementalCleaner, LineSplitter, count_breaks

__all__ = ["follow_batches", "follow_lines"]


class _Tail:
    """One open generation of the followed file: its handle, offset and line state."""

    def __init__(self, path: Path, fh: BinaryIO, max_line_chars: int, read_bytes: int) -> None:
        self.path = path
        self.fh = fh
        st = os.fstat(fh.fileno())
        self.ident = (st.st_dev, st.st_ino)
        self.offset = 0
        self.no = 0
        self.read_bytes = read_bytes
        self.cleaner = IncrementalCleaner()
        self.splitter = LineSplitter(max_line_chars)

    def _lines(self, texts: list[str]) -> list[LogLine]:
        first = self.no + 1
        self.no += len(texts)
        return _make_lines(first, texts)

    def skip_existing(self) -> None:
        """Consume what the file holds now without yielding it (line numbers stay exact;
        an unfinished last line is kept and comes out whole once its break arrives)."""
        left = os.fstat(self.fh.fileno()).st_size
        while left > 0 and (raw := self.fh.read(min(self.read_bytes, left))):
            left -= len(raw)
            self.offset += len(raw)
            head, long_line = self.splitter.feed(self.cleaner.feed(raw))
            self.no += count_breaks(head) + (long_line is not None)

    def read(self) -> Iterator[list[LogLine]]:
        """Batches of the complete lines appended since the last call (up to EOF now)."""
        while raw := self.fh.read(self.read_bytes):
            self.offset += len(raw)
            lines = self._lines(self.splitter.feed_lines(self.cleaner.feed(raw)))
            if lines:
                yield lines

    def finish(self) -> list[LogLine]:
        """The lines still held (a last line without a break): the file is done."""
        lines = self._lines(self.splitter.feed_lines(self.cleaner.feed(b"", final=True)))
        last = self.splitter.finish()
        if last is not None:
            lines += self._lines([last])
        return lines

    def truncated(self) -> bool:
        try:
            return os.fstat(self.fh.fileno()).st_size < self.offset
        except OSError:
            return False

    def restart(self) -> None:
        """Read the file again from its start (it was truncated in place)."""
        self.fh.seek(0)
        self.offset = 0
        self.no = 0
        self.cleaner.reset()
        self.splitter.reset()

    def replaced(self) -> bool:
        """True when the path now names another file (rotation); a missing path is not."""
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) != self.ident


def _try_open(path: Path) -> BinaryIO | None:
    """The file, or None while it does not exist (other problems raise InputError)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        pass  # let _open word the error
    try:
        return _open(path)
    except InputError:
        if not os.path.lexists(path):
            return None  # removed between the two calls
        raise


def follow_lines(
    path: str | Path,
    *,
    poll_s: float = 0.5,
    from_start: bool = True,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    read_bytes: int = 1024 * 1024,
) -> Iterator[LogLine]:
    """Yield complete lines as the file grows: `follow_batches` one line at a time."""
    for batch in follow_batches(
        path,
        poll_s=poll_s,
        from_start=from_start,
        stop=stop,
        sleep=sleep,
        max_line_chars=max_line_chars,
        read_bytes=read_bytes,
    ):
        yield from batch


def follow_batches(
    path: str | Path,
    *,
    poll_s: float = 0.5,
    from_start: bool = True,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_line_chars: int = DEFAULT_MAX_LINE_CHARS,
    read_bytes: int = 1024 * 1024,
) -> Iterator[list[LogLine]]:
    """Yield the complete lines read at once, as lists, as the file grows; `stop()` is checked
    at every poll (a reader that summarises may do so once per list, not once per line).

    Lines and their text are those `iter_lines` would give for the file; a line is
    complete at `\\n` or `\\r` (a progress-bar redraw is a line at once; a `\\n` arriving
    after it is part of the same break). An unfinished last line waits for its break;
    once longer than `max_line_chars` its head comes out and the rest is skipped.
    Missing file: waited for. Truncation (size below our offset): the held line is
    yielded, then the file is read again from its start. Rotation (the path names a new
    file): the old file is drained, then the new one is read from its start. Numbering
    restarts at 1 with each new file content, so `no` always matches the file on disk.
    `from_start=False` skips the lines present when the file is first opened (reading
    them once to keep numbers exact). When no data arrives, `sleep(poll_s)` is called.
    """
    if poll_s <= 0:
        raise ValueError("poll_s must be > 0 (a zero poll would spin)")
    p = Path(path)
    tail: _Tail | None = None
    first_open = True
    try:
        while True:
            if tail is None:
                fh = _try_open(p)
                if fh is not None:
                    tail = _Tail(p, fh, max_line_chars, read_bytes)
                    if first_open and not from_start:
                        tail.skip_existing()
                    first_open = False
            if tail is not None:
                for batch in tail.read():
                    if batch:
                        yield list(batch)
                    if stop is not None and stop():
                        return
                if tail.truncated():
                    if held := list(tail.finish()):
                        yield held
                    tail.restart()
                    continue
                if tail.replaced():
                    for batch in tail.read():  # drain what was written before the switch
                        if batch:
                            yield list(batch)
                    if held := list(tail.finish()):
                        yield held
                    tail.fh.close()
                    tail = None
                    continue
            if stop is not None and stop():
                return
            sleep(poll_s)
    finally:
        if tail is not None:
            tail.fh.close()
