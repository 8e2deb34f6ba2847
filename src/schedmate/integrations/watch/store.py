"""WatchStore: what `watch` remembers between cycles and across restarts (one SQLite file).

The action ledger is what makes a restarted watch safe for its own actions (a pending job's
TimeLimit): an action is written as `started` (committed) before it is carried out and
marked `done`/`failed` after, so a crash between the two never repeats it. Recovery actions
(requeue, resubmit, drain) are not in this ledger: the Failure Handler's audit log is their
one ledger, shared with `diagnose --execute`. Every SQLite failure (locked, read-only, corrupt, disk full) is a
one-line `BackendError` naming the file; the caller backs off and retries.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from schedmate.core.cluster import Action
from schedmate.core.errors import BackendError

__all__ = ["WatchStore", "LedgerStatus"]


class LedgerStatus:
    """Status of one of watch's own actions (a pending job's TimeLimit) in the store's ledger.
    Recovery actions are not here: they live in the Failure Handler's audit log."""

    PLANNED = "planned"  # seen in a dry run; a later --execute run still carries it out
    STARTED = "started"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # refused by a guard rail (recorded once, with why)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id TEXT PRIMARY KEY, user TEXT, partition TEXT, state TEXT, name TEXT,
    p50_s REAL, p90_s REAL, prediction TEXT, limit_before_s REAL,
    progress REAL, eta_s REAL, step_time_s REAL, step INTEGER, total_steps INTEGER,
    slowdown INTEGER DEFAULT 0, stalled INTEGER DEFAULT 0,
    diagnosis TEXT, ended_key TEXT, remembered INTEGER DEFAULT 0,
    submit_time REAL, start_time REAL, end_time REAL, updated REAL
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY, job_id TEXT, time REAL, kind TEXT, message TEXT
);
CREATE INDEX IF NOT EXISTS events_job ON events(job_id);
CREATE TABLE IF NOT EXISTS actions (
    action_id TEXT PRIMARY KEY, job_id TEXT, node TEXT, kind TEXT, detail TEXT, reason TEXT,
    status TEXT, created REAL, finished REAL, error TEXT
);
CREATE INDEX IF NOT EXISTS actions_job ON actions(job_id);
"""

_JOB_COLUMNS = frozenset(
    [
        "user",
        "partition",
        "state",
        "name",
        "p50_s",
        "p90_s",
        "prediction",
        "limit_before_s",
        "progress",
        "eta_s",
        "step_time_s",
        "step",
        "total_steps",
        "slowdown",
        "stalled",
        "diagnosis",
        "ended_key",
        "remembered",
        "submit_time",
        "start_time",
        "end_time",
    ]
)


class WatchStore:
    def __init__(self, path: str | Path, *, timeout_s: float = 5.0) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=timeout_s, isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            # durable against a killed process (what restarts must survive); the action ledger
            # below asks for a full sync on its own writes
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            raise BackendError(f"watch store {self.path}: {_one_line(exc)}") from None

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise BackendError(f"watch store {self.path}: {_one_line(exc)}") from None

    def _q(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        try:
            return list(self._db.execute(sql, args))
        except sqlite3.Error as exc:
            raise BackendError(f"watch store {self.path}: {_one_line(exc)}") from None

    def ping(self) -> None:
        """Fail now (one line) if the store cannot be written."""
        with self._tx() as db:
            db.execute("CREATE TABLE IF NOT EXISTS ping (x)")

    # -- jobs ---------------------------------------------------------------------------------
    def job(self, job_id: str) -> dict[str, Any] | None:
        rows = self._q("SELECT * FROM jobs WHERE job_id = ?", (job_id,))
        return dict(rows[0]) if rows else None

    def put_job(self, job_id: str, **fields: Any) -> None:
        bad = set(fields) - _JOB_COLUMNS
        if bad:
            raise ValueError(f"unknown job fields {sorted(bad)}")
        fields["updated"] = time.time()
        cols = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        sets = ", ".join(f"{c} = excluded.{c}" for c in fields)
        with self._tx() as db:
            db.execute(
                f"INSERT INTO jobs (job_id, {cols}) VALUES (?, {marks}) ON CONFLICT(job_id) DO UPDATE SET {sets}",
                (job_id, *fields.values()),
            )

    def add_event(self, job_id: str, kind: str, message: str, when: float | None = None) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO events (job_id, time, kind, message) VALUES (?, ?, ?, ?)",
                (job_id, when or time.time(), kind, message[:500]),
            )

    def events(self, job_id: str, limit: int = 200) -> list[dict[str, Any]]:
        rows = self._q(
            "SELECT time, kind, message FROM events WHERE job_id = ? ORDER BY id LIMIT ?", (job_id, limit)
        )
        return [dict(r) for r in rows]

    # -- the action ledger ------------------------------------------------------------------
    def action_status(self, action_id: str) -> str | None:
        rows = self._q("SELECT status FROM actions WHERE action_id = ?", (action_id,))
        return str(rows[0]["status"]) if rows else None

    def record_action(self, action: Action, status: str, *, error: str | None = None) -> None:
        """Insert or move an action to `status` (committed before the caller goes on)."""
        detail = json.dumps(
            {
                "time_limit_s": action.time_limit_s,
                "exclude_nodes": list(action.exclude_nodes),
                "mem": action.mem,
                "attempt": action.attempt,
            }
        )
        now = time.time()
        self._q("PRAGMA synchronous=FULL")
        finished = now if status in (LedgerStatus.DONE, LedgerStatus.FAILED, LedgerStatus.SKIPPED) else None
        with self._tx() as db:
            db.execute(
                "INSERT INTO actions (action_id, job_id, node, kind, detail, reason, status, created, finished, error) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(action_id) DO UPDATE SET "
                "status = excluded.status, finished = excluded.finished, error = excluded.error",
                (
                    action.action_id,
                    action.job_id,
                    action.node,
                    action.kind.value,
                    detail,
                    action.reason[:500],
                    status,
                    now,
                    finished,
                    error,
                ),
            )
        self._q("PRAGMA synchronous=NORMAL")

    def actions(self, job_id: str | None = None, status: str | None = None) -> list[dict[str, Any]]:
        sql, args = "SELECT * FROM actions WHERE 1=1", []
        if job_id is not None:
            sql += " AND job_id = ?"
            args.append(job_id)
        if status is not None:
            sql += " AND status = ?"
            args.append(status)
        return [dict(r) for r in self._q(sql + " ORDER BY created", tuple(args))]

    def count_actions(self, kind: str, *, job_id: str | None = None, since: float = 0.0) -> int:
        """Actions of a kind carried out or under way (started/done) by watch."""
        sql = "SELECT COUNT(*) FROM actions WHERE kind = ? AND status IN ('started', 'done') AND created >= ?"
        args: list[Any] = [kind, since]
        if job_id is not None:
            sql += " AND job_id = ?"
            args.append(job_id)
        return int(self._q(sql, tuple(args))[0][0])

    def summary(self) -> Mapping[str, int]:
        rows = self._q("SELECT status, COUNT(*) FROM actions GROUP BY status")
        return {str(r[0]): int(r[1]) for r in rows}


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
