"""SqliteHistoryStore: past jobs with their metadata and embedding, and nearest-neighbour search.

`SqliteHistoryStore` keeps every record (and its embedding) in one SQLite file, the source
of truth. The vector index (usearch HNSW, cosine) is derived from it and cached next to
it as `<file>.usearch`; a missing or stale index is rebuilt from SQLite, so losing it loses
nothing. Small stores are searched exactly.

Every database failure is one line naming the file (`_errors`): another writer holding the
lock longer than `busy_timeout_s`, a damaged file, a read-only file or directory, a full disk.
Writes are single transactions, so a failed batch leaves the store as it was. `read_only=True`
opens the file without ever writing to it (what `advise` needs; also on a read-only mount).
"""

from __future__ import annotations

import contextlib
import math
import os
import sqlite3
import stat
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from schedmate.advisor.extract.paths import plausible_path
from schedmate.advisor.history.base import (
    _COLS,
    EXACT_BELOW,
    JobRecord,
    Neighbor,
    _checked_vectors,
    _record_to_row,
    _row_to_record,
    _unit_query,
    ranked,
    top_indices,
)
from schedmate.core.errors import BackendError, ConfigError, InputError

__all__ = ["SqliteHistoryStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    rowid INTEGER PRIMARY KEY,
    job_id TEXT NOT NULL UNIQUE,
    duration_s REAL, submit_time REAL, status TEXT, n_gpus INTEGER, n_nodes INTEGER,
    gpu_model TEXT, user TEXT, name TEXT, code_dir TEXT, command TEXT, config_files TEXT,
    metadata TEXT, size TEXT, text TEXT, embedding BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_user ON jobs(user);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS extractions (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


BUSY_TIMEOUT_S = 5.0  # how long a write waits for another writer before giving up


class SqliteHistoryStore:
    """One SQLite file of jobs + a derived usearch HNSW index (`<file>.usearch`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        embedder_name: str | None = None,
        exact_below: int = EXACT_BELOW,
        read_only: bool = False,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
    ) -> None:
        self.path = Path(path)
        self.index_path = self.path.with_name(self.path.name + ".usearch")
        self.exact_below = exact_below
        self.read_only = read_only
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.RLock()
        self._index: Any = None
        self._index_dirty = False
        self._exact: tuple[np.ndarray, np.ndarray, list[str]] | None = None  # (rowids, unit vectors, job ids)
        self._db = self._open()
        try:
            stored = self.get_meta("embedder")
        except BaseException:
            self._db.close()
            raise
        if embedder_name and stored and stored != embedder_name:
            self._db.close()
            raise ConfigError(
                f"{self.path}: history was embedded with '{stored}', not '{embedder_name}'; "
                "use the same embedder or a new store"
            )
        self._embedder_name = embedder_name

    def _check_location(self) -> bool:
        """Whether the store file exists; anything but a regular file (a device, a FIFO, a
        directory) or a string no path can be is refused before SQLite sees it."""
        if not plausible_path(self.path):
            raise InputError(f"history store {str(self.path)[:80]!r}...: not a usable file name")
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise InputError(f"{self.path}: cannot open the history store: {exc.strerror}") from None
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{self.path}: not a regular file, cannot be a history store")
        return True

    def _open(self) -> sqlite3.Connection:
        exists = self._check_location()
        if self.read_only:
            if not exists:
                raise InputError(
                    f"{self.path}: no such history store (create it with `schedmate history import`)"
                )
            uri = "file:" + urllib.parse.quote(str(self.path.resolve()))
            # mode=ro never writes; on a read-only mount a WAL store cannot create its -shm file,
            # so it is opened as immutable (nobody can write there either)
            for suffix in ("?mode=ro", "?mode=ro&immutable=1"):
                db = None
                try:
                    db = sqlite3.connect(
                        uri + suffix, uri=True, timeout=self.busy_timeout_s, check_same_thread=False
                    )
                    db.execute("SELECT COUNT(*) FROM meta").fetchone()
                    return db
                except sqlite3.OperationalError as exc:
                    if db is not None:
                        db.close()
                    if "unable to open" not in str(exc) and "readonly" not in str(exc):
                        raise self._translate(exc) from None
                except sqlite3.DatabaseError as exc:
                    if db is not None:
                        db.close()
                    raise self._translate(exc) from None
            raise InputError(f"{self.path}: cannot open the history store read-only")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(
                f"{self.path}: cannot create the history store's folder: {exc.strerror}"
            ) from None
        db = None
        try:
            db = sqlite3.connect(str(self.path), timeout=self.busy_timeout_s, check_same_thread=False)
            if exists:
                tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
                if tables and "meta" not in tables:
                    db.close()
                    db = None
                    shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
                    raise InputError(
                        f"{self.path}: an SQLite database of another program (tables: {shown}), "
                        "not a history store; left untouched, give a new store path"
                    )
            db.executescript(_SCHEMA)
            db.execute("PRAGMA journal_mode=WAL")
            return db
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            raise self._translate(exc) from None

    def _translate(self, exc: sqlite3.Error) -> InputError | BackendError:
        """One line naming the store for any SQLite failure (the caller raises it from None)."""
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        low = msg.lower()
        if "locked" in low or "busy" in low:
            return BackendError(
                f"{self.path}: the history store is locked by another writer (waited "
                f"{self.busy_timeout_s:g} s); nothing was written, try again when it is done"
            )
        if "readonly" in low or "read-only" in low:
            return InputError(
                f"{self.path}: the history store is read-only ({msg}); nothing was written "
                "(advise reads it without writing; import into a writable copy)"
            )
        if "disk is full" in low or "disk full" in low or "database or disk is full" in low:
            return BackendError(f"{self.path}: disk full; this batch was not written, the store is unchanged")
        if (
            "malformed" in low
            or "not a database" in low
            or "file is not a database" in low
            or "corrupt" in low
        ):
            return InputError(
                f"{self.path}: the history store is damaged or not a schedmate store ({msg}); "
                "restore it from a copy or import the history into a new store"
            )
        if "unable to open" in low:
            return InputError(f"{self.path}: cannot open the history store ({msg})")
        if "no such table" in low or "no such column" in low:
            return InputError(f"{self.path}: not a schedmate history store ({msg})")
        return BackendError(f"{self.path}: history store: {msg}")

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Under the store's lock (reads too: the connection is shared across threads), with
        SQLite failures turned into one-line errors naming the file."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise self._translate(exc) from None

    def _writable(self) -> None:
        if self.read_only:
            raise InputError(f"{self.path}: the history store is open read-only; nothing was written")

    # -- metadata ---------------------------------------------------------------------------
    @property
    def dim(self) -> int | None:
        v = self.get_meta("dim")
        return int(v) if v else None

    def get_meta(self, key: str) -> str | None:
        with self._errors():
            row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._writable()
        with self._errors(), self._db:
            self._db.execute(
                "INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (key, value),
            )

    def get_extraction(self, key: str) -> str | None:
        with self._errors():
            row = self._db.execute("SELECT value FROM extractions WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put_extraction(self, key: str, value: str) -> None:
        self._writable()
        with self._errors(), self._db:
            self._db.execute("INSERT OR REPLACE INTO extractions(key, value) VALUES(?, ?)", (key, value))

    # -- writes -----------------------------------------------------------------------------
    def add(self, records: Sequence[JobRecord], vectors: np.ndarray) -> int:
        """Insert or replace records (by job_id) in one transaction."""
        if not records:
            return 0
        self._writable()
        dim = self.dim
        vecs = _checked_vectors(records, vectors, dim, str(self.path))
        rows = []
        for r, v in zip(records, vecs, strict=True):
            rows.append((*_record_to_row(r), v.astype(np.float32).tobytes()))
        with self._errors(), self._db:
            if dim is None:
                self._db.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES('dim', ?)", (str(vecs.shape[1]),)
                )
                if self._embedder_name:
                    self._db.execute(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES('embedder', ?)",
                        (self._embedder_name,),
                    )
            placeholders = ",".join("?" * (len(_COLS) + 1))
            self._db.executemany(
                f"INSERT INTO jobs({','.join(_COLS)}, embedding) VALUES({placeholders}) "
                "ON CONFLICT(job_id) DO UPDATE SET "
                + ", ".join(f"{c}=excluded.{c}" for c in (*_COLS[1:], "embedding")),
                rows,
            )
            self._db.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES('version', "
                "CAST(COALESCE((SELECT value FROM meta WHERE key='version'), 0) + 1 AS TEXT))"
            )
            if self._index is not None:
                self._update_index([r.job_id for r in records], vecs)
        self._exact = None
        return len(rows)

    def _update_index(self, job_ids: Sequence[str], vecs: np.ndarray) -> None:
        """Add new or replaced rows to the loaded HNSW index (saved later by flush_index/close)."""
        rowid_of: dict[str, int] = {}
        for i in range(0, len(job_ids), 500):
            chunk = list(job_ids[i : i + 500])
            q = f"SELECT job_id, rowid FROM jobs WHERE job_id IN ({','.join('?' * len(chunk))})"
            rowid_of.update({str(j): int(r) for j, r in self._db.execute(q, chunk)})
        last: dict[int, np.ndarray] = {}
        for jid, vec in zip(job_ids, vecs, strict=True):
            if jid in rowid_of:
                last[rowid_of[jid]] = vec  # a job given twice in one batch: its last vector wins
        keys = np.fromiter(last, dtype=np.uint64, count=len(last))
        present = [int(k) for k in keys if self._index.contains(int(k))]
        if present:
            self._index.remove(np.array(present, dtype=np.uint64))
        if len(keys):
            self._index.add(keys, np.stack(list(last.values())), log=False)
        self._index_dirty = True

    def flush_index(self) -> None:
        """Save the in-memory index and stamp it with the store's version."""
        if self._index is None or not self._index_dirty or self.read_only:
            return
        try:
            self._index.save(str(self.index_path))
            self._stamp_path().write_text(self.get_meta("version") or "0")
            self._index_dirty = False
        except (OSError, RuntimeError):
            pass  # a read-only location: the index lives in memory only

    def _stamp_path(self) -> Path:
        return self.index_path.with_name(self.index_path.name + ".version")

    # -- reads ------------------------------------------------------------------------------
    def count(self) -> int:
        with self._errors():
            return int(self._db.execute("SELECT COUNT(*) FROM jobs").fetchone()[0])

    def get(self, job_id: str) -> JobRecord | None:
        with self._errors():
            row = self._db.execute(f"SELECT {','.join(_COLS)} FROM jobs WHERE job_id=?", (job_id,)).fetchone()
        return None if row is None else _row_to_record(row)

    def _get_rows(self, rowids: Sequence[int]) -> dict[int, JobRecord]:
        out: dict[int, JobRecord] = {}
        ids = [int(r) for r in rowids]
        with self._errors():
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                q = f"SELECT rowid, {','.join(_COLS)} FROM jobs WHERE rowid IN ({','.join('?' * len(chunk))})"
                for row in self._db.execute(q, chunk).fetchall():
                    out[int(row[0])] = _row_to_record(row[1:])
        return out

    def by_user(self, user: str, limit: int = 1000) -> list[JobRecord]:
        q = f"SELECT {','.join(_COLS)} FROM jobs WHERE user=? ORDER BY rowid DESC LIMIT ?"
        with self._errors():
            rows = self._db.execute(q, (user, max(0, limit))).fetchall()
        return [_row_to_record(r) for r in rows][::-1]

    def durations(self, limit: int = 100_000) -> list[float]:
        q = "SELECT duration_s FROM jobs WHERE duration_s IS NOT NULL ORDER BY rowid DESC LIMIT ?"
        with self._errors():
            return [float(r[0]) for r in self._db.execute(q, (max(0, limit),)).fetchall()]

    def records(self, page: int = 5000) -> Iterator[JobRecord]:
        """Every record in rowid order, a page at a time (the lock is not held between pages)."""
        last = -1
        while True:
            q = f"SELECT rowid, {','.join(_COLS)} FROM jobs WHERE rowid > ? ORDER BY rowid LIMIT ?"
            with self._errors():
                rows = self._db.execute(q, (last, page)).fetchall()
            if not rows:
                return
            for row in rows:
                yield _row_to_record(row[1:])
            last = int(rows[-1][0])

    def _vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every (rowid, vector), filled chunk by chunk into one preallocated array."""
        n = self.count()
        keys = np.empty(n, dtype=np.uint64)
        vecs = np.empty((n, self.dim or 0), dtype=np.float32)
        i = 0
        for k, v in self._vector_chunks():
            m = min(len(k), n - i)
            keys[i : i + m], vecs[i : i + m] = k[:m], v[:m]
            i += m
        return keys[:i], vecs[:i]

    def _vector_chunks(self, size: int = 50_000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(rowids, vectors) in rowid order, `size` rows at a time: memory stays bounded at any store size."""
        dim = self.dim or 0
        last = -1
        while True:
            with self._errors():
                rows = self._db.execute(
                    "SELECT rowid, embedding FROM jobs WHERE rowid > ? ORDER BY rowid LIMIT ?", (last, size)
                ).fetchall()
            if not rows:
                return
            keys = np.fromiter((r[0] for r in rows), dtype=np.uint64, count=len(rows))
            vecs = np.empty((len(rows), dim), dtype=np.float32)
            for i, (_, blob) in enumerate(rows):
                vecs[i] = np.frombuffer(blob, dtype=np.float32, count=dim)
            last = int(rows[-1][0])
            del rows
            yield keys, vecs

    def _ensure_index(self) -> Any:
        """The usearch index, loaded from its cache file when current, else rebuilt and saved."""
        if self._index is not None:
            return self._index
        from usearch.index import Index

        version = self.get_meta("version") or "0"
        dim = self.dim
        if dim is None:
            return None
        stamp = self._stamp_path()
        if self.index_path.exists() and stamp.exists() and stamp.read_text().strip() == version:
            try:
                index = Index.restore(str(self.index_path), view=False)
                if index is not None and len(index) == self.count():
                    self._index = index
                    return index
            except (RuntimeError, ValueError, OSError):
                pass  # a damaged cache: rebuild it
        index = Index(
            ndim=dim, metric="cos", dtype="f16", connectivity=16, expansion_add=96, expansion_search=64
        )
        for (
            keys,
            vecs,
        ) in self._vector_chunks():  # in chunks: a 1M-job build no longer holds every vector twice
            index.add(keys, vecs, log=False, threads=os.cpu_count() or 1)
        self._index = index
        self._index_dirty = True
        self.flush_index()
        return index

    def search(self, vector: np.ndarray, k: int) -> list[Neighbor]:
        """The k nearest jobs by cosine similarity (exact for small stores, HNSW otherwise); ties
        broken by job_id, so the answer does not depend on the order jobs were stored."""
        n = self.count()
        if n == 0 or k <= 0:
            return []
        q = _unit_query(vector)
        with self._errors():
            if n < self.exact_below:
                if self._exact is None:
                    keys, vecs = self._vectors()
                    ids = [
                        str(r[0])
                        for r in self._db.execute("SELECT job_id FROM jobs ORDER BY rowid").fetchall()
                    ]
                    self._exact = (keys, vecs, ids[: len(keys)])
                keys, vecs, ids = self._exact
                sims = vecs @ q
                pairs = [(int(keys[i]), float(sims[i])) for i in top_indices(sims, ids, k)]
            else:
                index = self._ensure_index()
                # a few more candidates than asked, so that ties at the k-th place are broken by job_id
                matches = index.search(q, min(2 * k + 16, n))
                pairs = [
                    (int(key), 1.0 - float(dist))
                    for key, dist in zip(matches.keys, matches.distances, strict=True)
                ]
        recs = self._get_rows([p[0] for p in pairs])
        found = [Neighbor(recs[key], sim) for key, sim in pairs if key in recs and math.isfinite(sim)]
        return ranked(found, k)

    def build_index(self) -> None:
        """Build (or load) the HNSW index now rather than at the first large search."""
        with self._lock:
            self._ensure_index()
            self.flush_index()

    def close(self) -> None:
        with self._lock:
            self.flush_index()
            self._db.close()

    def delete_files(self) -> None:
        """After `close`: remove the store's file, its WAL companions and its index (an import
        that created the store and stored nothing leaves nothing behind)."""
        for p in (
            self.path,
            *(self.path.with_name(self.path.name + x) for x in ("-wal", "-shm")),
            self.index_path,
        ):
            with contextlib.suppress(OSError):
                p.unlink()
