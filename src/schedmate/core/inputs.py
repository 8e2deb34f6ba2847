"""One input-limits layer for every reader: file type, size and time (importable as `schedmate.inputs`).

Every file schedmate reads on a user's behalf (configs, job code, history files, traces,
batch files) goes through here, so that a FIFO, `/dev/zero`, a 10 GB "config" or a file
that never ends cannot hang a command or exhaust memory. Errors are `InputError`s with one
line naming the file. Logs are the exception: they are streamed by `schedmate.logio`, which
bounds its own memory; it uses `check_regular` for the type check.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from pathlib import Path
from typing import BinaryIO

from schedmate.core.errors import InputError

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

MAX_CONFIG_BYTES = 4 * 1024 * 1024  # settings, YAML/JSON/TOML job configs
MAX_SOURCE_BYTES = 1_000_000  # one source file of a job
MAX_TABLE_BYTES = 20 * 1024**3  # traces and histories are streamed; this only refuses absurd inputs

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _oserror(path: str | Path, what: str, exc: OSError) -> InputError:
    return InputError(f"{what} {path}: {exc.strerror or exc}")


def check_regular(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> os.stat_result:
    """stat() `path` and refuse anything but a regular file of at most `max_bytes`."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _oserror(path, what, exc) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} {path}: is {_kind(st.st_mode)}, not a regular file")
    if max_bytes is not None and st.st_size > max_bytes:
        raise InputError(f"{what} {path}: {st.st_size:,} bytes, over the limit of {max_bytes:,}")
    return st


def open_regular(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> BinaryIO:
    """Open a regular file for reading without ever blocking on a FIFO or a device.

    The file is opened non-blocking and checked with fstat() on the open descriptor (no
    race between the check and the open), then switched back to blocking reads."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise _oserror(path, what, exc) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} {path}: is {_kind(st.st_mode)}, not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise InputError(f"{what} {path}: {st.st_size:,} bytes, over the limit of {max_bytes:,}")
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int = MAX_CONFIG_BYTES) -> bytes:
    """The whole of a regular file of at most `max_bytes` (also if it grows while read)."""
    with open_regular(path, what=what, max_bytes=max_bytes) as fh:
        try:
            data = fh.read(max_bytes + 1)
        except OSError as exc:
            raise _oserror(path, what, exc) from None
    if len(data) > max_bytes:
        raise InputError(f"{what} {path}: grew past the limit of {max_bytes:,} bytes while being read")
    return data


def read_text(
    path: str | Path,
    *,
    what: str = "file",
    max_bytes: int = MAX_CONFIG_BYTES,
    errors: str = "strict",
) -> str:
    """A regular file decoded as UTF-8 (a BOM is dropped). With errors='strict' (the default)
    bytes that are not UTF-8 are an `InputError` naming the file and the byte offset."""
    data = read_bytes(path, what=what, max_bytes=max_bytes)
    try:
        return data.decode("utf-8-sig", errors=errors)
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {exc.start})") from None


class Deadline:
    """A time budget for one piece of work: `remaining()` seconds, `expired`, `check()`."""

    def __init__(self, seconds: float, what: str = "operation") -> None:
        self.seconds = seconds
        self.what = what
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return max(0.0, self._end - time.monotonic())

    @property
    def expired(self) -> bool:
        return time.monotonic() >= self._end

    def check(self) -> None:
        if self.expired:
            raise InputError(f"{self.what}: gave up after {self.seconds:g} s")
