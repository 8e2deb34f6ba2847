"""The recovery audit log: append-only JSONL, the memory behind budgets and corroboration.

- Times are ISO 8601 UTC (`2026-11-24T06:44:24.123Z`).
- A torn last line (a crash mid-write) is repaired before the next append: a newline is
  written first, so the torn bytes stay one unreadable line and the new record is intact.
- Appends take an exclusive `flock` (a second writer, `watch` and `diagnose`, waits up to
  `lock_timeout_s`); any failure to write is an `InputError` naming the file, never a
  traceback, and callers decide whether the run goes on.
- Only the last `max_read_bytes` are read: budgets and corroboration look at a window.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from schedmate.core.errors import InputError
from schedmate.inputs import check_regular

__all__ = ["AuditLog", "iso_utc", "parse_time"]

_MAX_READ = 32 * 1024 * 1024


def iso_utc(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_time(value: Any) -> float | None:
    """POSIX seconds of a record's time (ISO 8601, or a number from older records)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return (dt if dt.tzinfo else dt.replace(tzinfo=UTC)).timestamp()
    return None


class AuditLog:
    """Append-only JSONL of recovery decisions and executions (`path=None`: in memory)."""

    def __init__(
        self,
        path: Path | None = None,
        clock: Callable[[], float] = time.time,
        *,
        lock_timeout_s: float = 5.0,
        max_read_bytes: int = _MAX_READ,
    ) -> None:
        self.path = path
        self.clock = clock
        self.lock_timeout_s = lock_timeout_s
        self.records: list[dict[str, Any]] = []
        self.read_error: str | None = None
        if path is not None:
            try:
                self.records = list(self._read(path, max_read_bytes))
            except InputError as exc:
                self.read_error = str(exc)

    @staticmethod
    def _read(path: Path, max_bytes: int) -> Iterator[dict[str, Any]]:
        try:
            if not path.exists():
                return
            size = check_regular(path, what="audit log").st_size
            with path.open("rb") as fh:
                if size > max_bytes:
                    fh.seek(size - max_bytes)
                    fh.readline()  # skip the partial first line of the window
                data = fh.read(max_bytes)
        except OSError as exc:
            raise InputError(f"{path}: cannot read the audit log ({exc.strerror or exc})") from None
        for raw in data.split(b"\n"):
            try:
                rec = json.loads(raw)
            except ValueError:
                continue  # a torn or foreign line: skipped, never fatal
            if isinstance(rec, dict):
                yield rec

    def now(self) -> float:
        return self.clock()

    def append(self, record: dict[str, Any]) -> dict[str, Any]:
        """Record one entry (time added); raises `InputError` when it cannot be written."""
        rec = {"time": iso_utc(self.clock()), **record}
        line = json.dumps(rec, default=str, allow_nan=False) + "\n"
        self.records.append(rec)
        if self.path is not None:
            self._write(line.encode("utf-8"))
        return rec

    def _write(self, data: bytes) -> None:
        assert self.path is not None
        p = self.path
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
            if p.exists():
                check_regular(p, what="audit log")
            fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise InputError(f"{p}: cannot write the audit log ({exc.strerror or exc})") from None
        try:
            self._lock(fd)
            size = os.fstat(fd).st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # repair a torn tail before appending
            os.write(fd, data)
            os.fsync(fd)
        except OSError as exc:
            raise InputError(f"{p}: cannot write the audit log ({exc.strerror or exc})") from None
        finally:
            os.close(fd)

    def _lock(self, fd: int) -> None:
        deadline = time.monotonic() + self.lock_timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise InputError(
                        f"{self.path}: audit log locked by another process for {self.lock_timeout_s:g} s"
                    ) from None
                time.sleep(0.05)

    # -- queries ------------------------------------------------------------------------
    def executions(self, action_id: str) -> set[str]:
        """Phases recorded for one action id: `started`, `done`, `failed`."""
        return {
            str(r.get("phase"))
            for r in self.records
            if r.get("type") == "execution" and r.get("action_id") == action_id
        }

    def executed_count(self, job_id: str) -> int:
        """Recovery actions started for a job (dry runs are not counted): its budget use."""
        return len(
            {
                r.get("action_id")
                for r in self.records
                if r.get("type") == "execution"
                and r.get("phase") == "started"
                and r.get("job_id") == job_id
                and r.get("action") != "drain_node"
            }
        )

    def infra_events(self, since: float) -> list[dict[str, Any]]:
        """Decisions of infrastructure failures on scheduler-placed nodes since `since`."""
        out = []
        for r in self.records:
            if r.get("type") != "decision" or r.get("category") != "infrastructure":
                continue
            if not r.get("scheduler_nodes"):
                continue
            t = parse_time(r.get("time"))
            if t is not None and t >= since:
                out.append(r)
        return out
