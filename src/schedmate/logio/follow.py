"""Follow a growing log (tail -F semantics): appends, `\\r` redraws, truncation, rotation."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from schedmate.core.types import LogLine
from schedmate.logio.reader import _BREAK_RAW, clean_text

__all__ = ["follow_lines"]


def follow_lines(
    path: str | Path,
    *,
    poll_s: float = 0.5,
    from_start: bool = True,
    stop: Callable[[], bool] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    max_line_chars: int = 1024 * 1024,
    read_bytes: int = 1024 * 1024,
) -> Iterator[LogLine]:
    """Yield complete lines as the file grows; `stop()` is checked at every poll.

    A line is complete at `\\n` or `\\r` (a progress bar redraw is a line). A `\\r` that
    ends the data read so far may still be the first half of `\\r\\n`: its line is yielded
    at once and a `\\n` arriving next is swallowed. Truncation (size below our offset)
    restarts at 0; rotation (a new inode at the path) drains the old file, then reads the
    new one from its start. A file that does not exist yet is waited for.
    """
    p = Path(path)
    fh = None
    ino = None
    offset = 0
    buf = b""
    no = 0
    swallow_lf = False
    first_open = True
    max_bytes = max_line_chars * 4
    try:
        while True:
            if fh is None:
                try:
                    fh = p.open("rb")
                except OSError:
                    fh = None
                if fh is not None:
                    st = os.fstat(fh.fileno())
                    ino = st.st_ino
                    offset = 0 if (from_start or not first_open) else st.st_size
                    fh.seek(offset)
                    first_open = False
            got_data = False
            if fh is not None:
                try:
                    size = os.fstat(fh.fileno()).st_size
                except OSError:
                    size = offset
                if size < offset:  # truncated in place: start over
                    offset = 0
                    fh.seek(0)
                    buf = b""
                    swallow_lf = False
                data = fh.read(read_bytes)
                if data:
                    got_data = True
                    offset += len(data)
                    if swallow_lf and data[:1] == b"\n":
                        data = data[1:]
                    swallow_lf = False
                    buf += data.replace(b"\x00", b"")
                    last = None
                    for m in _BREAK_RAW.finditer(buf):
                        last = m
                    if last is not None:
                        complete = buf[: last.end()]
                        buf = buf[last.end():]
                        if complete.endswith(b"\r"):
                            swallow_lf = True
                        text = clean_text(complete)
                        parts = _split(text)
                        for s in parts:
                            no += 1
                            yield LogLine(no, s[:max_line_chars])
                    if len(buf) > max_bytes:
                        no += 1
                        yield LogLine(no, clean_text(buf[:max_bytes])[:max_line_chars])
                        buf = b""
                elif _rotated(p, ino):
                    fh.close()  # the old file is drained (read returned nothing): switch
                    fh = None
                    buf = b""
                    swallow_lf = False
                    continue
            if not got_data:
                if stop is not None and stop():
                    return
                sleep(poll_s)
            elif stop is not None and stop():
                return
    finally:
        if fh is not None:
            fh.close()


def _split(text: str) -> list[str]:
    from schedmate.logio.reader import split_lines

    return split_lines(text)


def _rotated(p: Path, ino: int | None) -> bool:
    try:
        return os.stat(p).st_ino != ino
    except OSError:
        return False
