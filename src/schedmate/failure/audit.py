"""The recovery audit log: append-only JSONL, the memory behind budgets and corroboration.

- Times are ISO 8601 UTC (`2026-11-24T06:44:24.123Z`).
- A torn last line (a crash mid-write) is repaired before the next append: a newline is
  written first, so the torn bytes stay one unreadable line and the new record is intact.
- Appends take an exclusive `flock` (a second writer, `watch` and `diagnose`, waits up to
  `lock_timeout_s`); any failure to write is an `InputError` naming the file, never a
  traceback, and callers decide whether the run goes on.
- Only the last `max_read_bytes` are read: budgets and corroboration look at a window.
- It is the ONE ledger of recovery actions, shared by `watch` and `diagnose --execute`: an
  action is claimed (`claim`: its `started` record appended under the lock after re-reading
  the file) before the scheduler is touched, so two processes, or a restarted one, never
  execute the same action id twice. A long-running reader calls `refresh()` to see the
  other writers' records.
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
        self.max_read_bytes = max_read_bytes
        self.records: list[dict[str, Any]] = []
        self.read_error: str | None = None
        self._seen: tuple[int, int, int] | None = None
        self.refresh()

    def _stamp(self) -> tuple[int, int, int] | None:
        assert self.path is not None
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def refresh(self) -> None:
        """Re-read the file when another process (or this one) changed it since the last read."""
        if self.path is None:
            return
        stamp = self._stamp()
        if stamp is not None and stamp == self._seen:
            return
        self._reload(stamp)

    def _reload(self, stamp: tuple[int, int, int] | None) -> None:
        assert self.path is not None
        try:
            self.records = list(self._read(self.path, self.max_read_bytes))
            self.read_error = None
        except InputError as exc:
            self.read_error = str(exc)
        self._seen = stamp

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
        try:
            if self.path is not None:
                self._write(line.encode("utf-8"))
        finally:
            self.records.append(rec)  # kept in memory even when unwritable (this run's view)
        return rec

    def claim(self, record: dict[str, Any]) -> bool:
        """Append an execution's `started` record unless its action id was already started
        (and not failed) or done by anyone: checked and written under one lock, after
        re-reading the file. False: someone else has it; do not execute."""
        aid = str(record["action_id"])
        rec = {"time": iso_utc(self.clock()), **record, "type": "execution", "phase": "started"}
        line = (json.dumps(rec, default=str, allow_nan=False) + "\n").encode("utf-8")
        if self.path is None:
            if self._taken(aid):
                return False
            self.records.append(rec)
            return True
        claimed = self._write(line, check=lambda: not self._taken(aid))
        if claimed:
            self.records.append(rec)
        return claimed

    def _taken(self, action_id: str) -> bool:
        phases = self.executions(action_id)
        return "done" in phases or ("started" in phases and "failed" not in phases)

    def _write(self, data: bytes, check: Callable[[], bool] | None = None) -> bool:
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
            st = os.fstat(fd)
            if (st.st_ino, st.st_size, st.st_mtime_ns) != self._seen:
                self._reload(
                    (st.st_ino, st.st_size, st.st_mtime_ns)
                )  # under the lock: every writer's records
            if check is not None:
                if self.read_error is not None:
                    raise InputError(f"{self.read_error}; not executed")
                if not check():
                    return False
            size = st.st_size
            if size > 0 and os.pread(fd, 1, size - 1) != b"\n":
                data = b"\n" + data  # repair a torn tail before appending
            os.write(fd, data)
            os.fsync(fd)
            st = os.fstat(fd)
            self._seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError as exc:
            raise InputError(f"{p}: cannot write the audit log ({exc.strerror or exc})") from None
        finally:
            os.close(fd)
        return True

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

    def executed_since(self, action: str, since: float) -> int:
        """Actions of one kind (`drain_node`...) started since `since`, by any process."""
        return len(
            {
                r.get("action_id")
                for r in self.records
                if r.get("type") == "execution"
                and r.get("phase") == "started"
                and r.get("action") == action
                and (parse_time(r.get("time")) or 0.0) >= since
            }
        )

    def unfinished(self) -> list[dict[str, Any]]:
        """Executions started and never confirmed (a crash between `started` and `done`)."""
        phases: dict[str, set[str]] = {}
        first: dict[str, dict[str, Any]] = {}
        for r in self.records:
            if r.get("type") != "execution" or not r.get("action_id"):
                continue
            aid = str(r["action_id"])
            phases.setdefault(aid, set()).add(str(r.get("phase")))
            first.setdefault(aid, r)
        return [first[a] for a, ph in phases.items() if ph == {"started"}]

    def job_executions(self, job_id: str) -> list[dict[str, Any]]:
        """One entry per action id executed for a job: its first record and last phase."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.records:
            if r.get("type") != "execution" or r.get("job_id") != job_id or not r.get("action_id"):
                continue
            aid = str(r["action_id"])
            entry = out.setdefault(aid, {**r, "started": r.get("time")})
            entry["phase"] = r.get("phase")
            entry["finished"] = r.get("time") if r.get("phase") in ("done", "failed") else None
            if r.get("error"):
                entry["error"] = r.get("error")
        return list(out.values())

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
