"""Per-job log following for many jobs in one process: only new bytes each cycle, bounded memory.

A `JobLog` keeps the byte offset, the inode (a rotated or truncated file starts over), a
partial last line and the last `window` lines. A job's output file is read only if the
scheduler named it, it is a regular file (not a symlink, FIFO or device) and it belongs to
the job's user, so a job cannot make watch (running as root) read someone else's file.
"""

from __future__ import annotations

import os
import pwd
import stat
from collections import deque
from dataclasses import dataclass, field

from schedmate.core.errors import InputError
from schedmate.inputs import open_regular

__all__ = ["JobLog", "owner_uid"]

MAX_LINE_CHARS = 4096


def owner_uid(user: str | None) -> int | None:
    """The uid of a Slurm user name (None when unknown here)."""
    if not user:
        return None
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


@dataclass
class JobLog:
    path: str
    window: int = 64
    offset: int = 0
    inode: int | None = None
    line_base: int = 0  # lines that fell out of the window (or were skipped)
    lines: deque[str] = field(default_factory=deque)
    partial: bytes = b""
    last_growth: float | None = None
    seen: set[tuple[str, int]] = field(default_factory=set)
    stalled: bool = False
    baseline: float | None = None  # the job's usual step time (seconds), learned across cycles

    def __post_init__(self) -> None:
        self.lines = deque(maxlen=self.window)

    @property
    def total_lines(self) -> int:
        return self.line_base + len(self.lines)

    def read_new(self, *, max_bytes: int, now: float, uid: int | None) -> int:
        """Read what was appended since the last call (at most `max_bytes`, the newest ones).
        Returns the number of new complete lines; InputError when the file may not be read."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return 0  # not created yet (a pending job's output, a slow file system)
        except OSError as exc:
            raise InputError(f"job log {self.path}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(st.st_mode):
            raise InputError(f"job log {self.path}: is a symlink, not followed")
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"job log {self.path}: not a regular file, not read")
        if uid is None or st.st_uid != uid:
            raise InputError(f"job log {self.path}: not owned by the job's user, not read")
        if self.inode is not None and (st.st_ino != self.inode or st.st_size < self.offset):
            self.offset, self.partial = 0, b""  # replaced or truncated: start over
            self.line_base += len(self.lines)
            self.lines.clear()
        self.inode = st.st_ino
        if st.st_size <= self.offset:
            return 0
        start = self.offset
        skipped = False
        if st.st_size - start > max_bytes:
            start, skipped = st.st_size - max_bytes, True
        with open_regular(self.path, what="job log") as fh:
            fh.seek(start)
            data = fh.read(st.st_size - start)
        self.offset = start + len(data)
        self.last_growth = now
        if skipped:
            self.partial = b""
            nl = data.find(b"\n")
            data = data[nl + 1 :] if nl >= 0 else b""
            self.line_base += 1  # the cut line (the number is approximate after a skip)
        data = self.partial + data
        cut = data.rfind(b"\n")
        if cut < 0:
            self.partial = data[-MAX_LINE_CHARS:]
            return 0
        self.partial = data[cut + 1 :][-MAX_LINE_CHARS:]
        new = 0
        for raw in data[:cut].split(b"\n"):
            text = raw.decode("utf-8", "replace").rstrip("\r")
            # progress bars rewrite one line with carriage returns: the last state counts
            text = text.rsplit("\r", 1)[-1][:MAX_LINE_CHARS]
            if len(self.lines) == self.lines.maxlen:
                self.line_base += 1
            self.lines.append(text)
            new += 1
        return new

    def first_time(self, kind: str, line_no: int) -> bool:
        """An event (kind, absolute line) not reported before; the memory of them is bounded."""
        key = (kind, line_no)
        if key in self.seen:
            return False
        if len(self.seen) > 1000:
            self.seen = {k for k in self.seen if k[1] > self.line_base - self.window}
        self.seen.add(key)
        return True
