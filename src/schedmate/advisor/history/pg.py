"""PgvectorHistoryStore: the job history in PostgreSQL, searched by pgvector's HNSW index.

The same `HistoryStore` contract as `SqliteHistoryStore`, for a history shared by many users or
machines. Every store lives in its own schema (`?schema=NAME` in the URL, default `schedmate`),
so several stores share one database. PostgreSQL holds the index too: small stores are searched
exactly (as SQLite's are) and have none; once a store reaches `exact_below` jobs an HNSW index
(`vector_cosine_ops`) is built in bulk and then maintained on insert. psycopg and pgvector are imported only when a store is opened
(`pip install 'schedmate[postgres]'`).
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

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
)
from schedmate.core.errors import BackendError, BackendUnavailable, ConfigError, InputError

if TYPE_CHECKING:
    from psycopg import sql

__all__ = ["PgvectorHistoryStore", "is_postgres_url", "redact_url", "STORE_FORMAT", "DEFAULT_SCHEMA"]

STORE_FORMAT = 1  # bumped when the tables change incompatibly; a store of another format is refused
DEFAULT_SCHEMA = "schedmate"
HNSW_MAX_DIM = 2000  # pgvector cannot index more dimensions; such stores are searched exactly
_MIN_PGVECTOR = (0, 5)  # HNSW arrived in pgvector 0.5
_PAGE = 1000  # rows per round trip when streaming records
_INDEX = "jobs_embedding_hnsw"
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")

# column types, keyed by the SQLite store's columns so a new JobRecord column fails loudly here
_TYPES = {
    "job_id": "text NOT NULL UNIQUE",
    "duration_s": "double precision",
    "submit_time": "double precision",
    "status": "text",
    "n_gpus": "integer",
    "n_nodes": "integer",
    "gpu_model": "text",
    "user": "text",
    "name": "text",
    "code_dir": "text",
    "command": "text",
    "config_files": "jsonb",
    "metadata": "jsonb",
    "size": "jsonb",
    "text": "text",
}
if set(_TYPES) != set(_COLS):
    raise ImportError("store_pg._TYPES is out of step with store._COLS")
_JSON_COLS = frozenset({"config_files", "metadata", "size"})


def is_postgres_url(location: object) -> bool:
    """True for a `postgresql://` or `postgres://` URL (a history store in PostgreSQL)."""
    return isinstance(location, str) and location.lower().startswith(("postgresql://", "postgres://"))


def redact_url(url: str) -> str:
    """The URL without its password (in the user part or as a `password=` parameter)."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, host = netloc.rsplit("@", 1)
            netloc = f"{user.split(':', 1)[0]}@{host}"
        query = urlencode(
            [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"]
        )
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return url.split("://", 1)[0] + "://(unparsable URL)"


def _split_schema(url: str) -> tuple[str, str | None]:
    """(libpq URL without our `schema` parameter, the schema it named)."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in params if k == "schema"), None)
    query = urlencode([(k, v) for k, v in params if k != "schema"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment)), schema


def _one_line(exc: BaseException, secret: str | None) -> str:
    """libpq's message on one line, without prefixes, hints or the password."""
    lines = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    msg = lines[0] if lines else type(exc).__name__
    for prefix in ("connection failed: ", "connection is bad: "):
        msg = msg.removeprefix(prefix)
    msg = msg.replace("FATAL:  ", "").replace("ERROR:  ", "")
    if secret:
        msg = msg.replace(secret, "***")
    if "Connection refused" in msg:
        msg += " (is the server running?)"
    return msg


class PgvectorHistoryStore:
    """Jobs in `<schema>.jobs` of a PostgreSQL database, with an HNSW cosine index (pgvector)."""

    def __init__(
        self,
        url: str,
        *,
        embedder_name: str | None = None,
        schema: str | None = None,
        exact_below: int = EXACT_BELOW,
        ef_search: int = 100,
        connect_timeout: int = 10,
        read_only: bool = False,
    ) -> None:
        self.url = redact_url(url)
        self.read_only = read_only
        try:
            conninfo, url_schema = _split_schema(url)
        except ValueError as exc:
            raise ConfigError(f"{self.url}: not a PostgreSQL URL ({exc})") from None
        self.schema = schema or url_schema or DEFAULT_SCHEMA
        if not _SCHEMA_NAME.match(self.schema):
            raise ConfigError(
                f"{self.url}: schema {self.schema!r} must be a plain identifier (letters, digits, _)"
            )
        self.exact_below = exact_below
        self.ef_search = max(1, ef_search)
        self._lock = threading.RLock()
        self._large = False  # stores only grow: once large, the exact-search count is skipped
        self._indexed = False  # the HNSW index exists (it is built once the store is large)
        try:
            import psycopg
            from pgvector.psycopg import register_vector
        except ImportError:
            raise ConfigError(
                f"{self.url}: a PostgreSQL history store needs psycopg and pgvector: "
                "pip install 'schedmate[postgres]'"
            ) from None
        self._pg = psycopg
        secret = urlsplit(conninfo).password
        try:
            self._db = psycopg.connect(conninfo, autocommit=True, connect_timeout=connect_timeout)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(f"{self.url}: bad PostgreSQL URL: {_one_line(exc, secret)}") from None
        except psycopg.OperationalError as exc:
            msg = _one_line(exc, secret)
            if "invalid" in msg and "connection option" in msg:
                raise ConfigError(f"{self.url}: bad PostgreSQL URL: {msg}") from None
            raise BackendUnavailable(f"{self.url}: cannot connect to PostgreSQL: {msg}") from None
        try:
            with self._errors():
                self._ensure_extension()
                register_vector(self._db)
                if read_only:  # the server refuses every write in this session
                    self._db.execute("SET default_transaction_read_only = on")
                else:
                    self._create_tables()
                self._check_format()
                stored = self.get_meta("embedder")
                self._indexed = self._has_index()
        except BaseException:
            self._db.close()
            raise
        if embedder_name and stored and stored != embedder_name:
            self._db.close()
            raise ConfigError(
                f"{self.url} (schema {self.schema}): history was embedded with '{stored}', not "
                f"'{embedder_name}'; use the same embedder or a new store"
            )
        self._embedder_name = embedder_name

    # -- plumbing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        """Database failures become one-line BackendErrors naming the store."""
        try:
            yield
        except self._pg.OperationalError as exc:
            raise BackendUnavailable(f"{self.url}: PostgreSQL: {_one_line(exc, None)}") from None
        except self._pg.Error as exc:
            raise BackendError(
                f"{self.url} (schema {self.schema}): PostgreSQL: {_one_line(exc, None)}"
            ) from None

    def _t(self, table: str) -> sql.Composable:
        from psycopg import sql

        return sql.Identifier(self.schema, table)

    def _ensure_extension(self) -> None:
        row = self._db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        if row is None:
            available = self._db.execute(
                "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            if available is None:
                raise ConfigError(
                    f"{self.url}: the server has no pgvector extension ('vector'); install pgvector "
                    "on the database server (.ci/provision_pgvector.sh shows how)"
                )
            try:
                self._db.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except self._pg.Error as exc:
                raise ConfigError(
                    f"{self.url}: extension 'vector' is not enabled in this database and cannot be "
                    f"created ({_one_line(exc, None)}); run `CREATE EXTENSION vector` as a superuser"
                ) from None
            row = self._db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        version = tuple(int(x) for x in re.findall(r"\d+", str(row[0]))[:2]) if row else ()
        if version < _MIN_PGVECTOR:
            raise ConfigError(
                f"{self.url}: pgvector {row[0] if row else '?'} has no HNSW index; "
                "`ALTER EXTENSION vector UPDATE` to 0.5 or later"
            )

    def _create_tables(self) -> None:
        from psycopg import sql

        cols = sql.SQL(", ").join(
            sql.SQL("{} {}").format(sql.Identifier(c), sql.SQL(_TYPES[c])) for c in _COLS
        )
        with self._lock, self._db.transaction():
            # concurrent first opens of one schema would race on CREATE ... IF NOT EXISTS
            self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"schedmate:{self.schema}",))
            self._db.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            self._db.execute(
                sql.SQL(
                    "CREATE TABLE IF NOT EXISTS {} (id bigserial PRIMARY KEY, {}, embedding vector NOT NULL)"
                ).format(self._t("jobs"), cols)
            )
            self._db.execute(
                sql.SQL("CREATE INDEX IF NOT EXISTS jobs_user ON {} ({})").format(
                    self._t("jobs"), sql.Identifier("user")
                )
            )
            self._db.execute(
                sql.SQL("CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, value text)").format(
                    self._t("meta")
                )
            )
            self._db.execute(
                sql.SQL("CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, value text NOT NULL)").format(
                    self._t("extractions")
                )
            )
            self._db.execute(
                sql.SQL(
                    "INSERT INTO {} (key, value) VALUES ('store_format', %s) ON CONFLICT (key) DO NOTHING"
                ).format(self._t("meta")),
                (str(STORE_FORMAT),),
            )

    def _check_format(self) -> None:
        found = self.get_meta("store_format")
        if found != str(STORE_FORMAT):
            raise ConfigError(
                f"{self.url} (schema {self.schema}): store format {found}, this schedmate reads "
                f"format {STORE_FORMAT}; use another schema or the matching schedmate"
            )

    # -- metadata ---------------------------------------------------------------------------
    @property
    def dim(self) -> int | None:
        v = self.get_meta("dim")
        return int(v) if v else None

    def get_meta(self, key: str) -> str | None:
        return self._get_kv("meta", key)

    def set_meta(self, key: str, value: str) -> None:
        self._put_kv("meta", key, value)

    def get_extraction(self, key: str) -> str | None:
        return self._get_kv("extractions", key)

    def put_extraction(self, key: str, value: str) -> None:
        self._put_kv("extractions", key, value)

    def _get_kv(self, table: str, key: str) -> str | None:
        from psycopg import sql

        with self._lock, self._errors():
            row = self._db.execute(
                sql.SQL("SELECT value FROM {} WHERE key = %s").format(self._t(table)), (key,)
            ).fetchone()
        return None if row is None or row[0] is None else str(row[0])

    def _writable(self) -> None:
        if self.read_only:
            raise InputError(f"{self.url} (schema {self.schema}): the history store is open read-only")

    def _put_kv(self, table: str, key: str, value: str) -> None:
        from psycopg import sql

        self._writable()
        with self._lock, self._errors():
            self._db.execute(
                sql.SQL(
                    "INSERT INTO {} (key, value) VALUES (%s, %s) ON CONFLICT (key) "
                    "DO UPDATE SET value = EXCLUDED.value"
                ).format(self._t(table)),
                (key, value),
            )

    # -- writes -----------------------------------------------------------------------------
    def add(self, records: Sequence[JobRecord], vectors: np.ndarray) -> int:
        """Insert or replace records (by job_id) in one transaction."""
        if not records:
            return 0
        self._writable()
        dim = self.dim
        vecs = _checked_vectors(records, vectors, dim, f"{self.url} (schema {self.schema})")
        last: dict[str, int] = {
            r.job_id: i for i, r in enumerate(records)
        }  # a job given twice: the last wins
        with self._lock, self._errors(), self._db.transaction():
            if dim is None:
                self._set_dim(int(vecs.shape[1]))
            self._upsert([(records[i], vecs[i]) for i in sorted(last.values())])
        return len(records)

    def _set_dim(self, dim: int) -> None:
        """First add: fix the column's dimension (an HNSW index needs it)."""
        from psycopg import sql

        self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"schedmate:{self.schema}",))
        stored = self.get_meta("dim")  # another writer may have been first
        if stored is not None:
            if int(stored) != dim:
                raise ConfigError(
                    f"{self.url} (schema {self.schema}): store holds {stored}-dim embeddings, got {dim}"
                )
            return
        self._db.execute(
            sql.SQL("ALTER TABLE {} ALTER COLUMN embedding TYPE vector({})").format(
                self._t("jobs"), sql.Literal(dim)
            )
        )
        self.set_meta("dim", str(dim))
        if self._embedder_name:
            self.set_meta("embedder", self._embedder_name)

    def _upsert(self, rows: Sequence[tuple[JobRecord, np.ndarray]]) -> None:
        """COPY into a temporary table, then one INSERT ... ON CONFLICT (fast and atomic)."""
        from psycopg import sql

        cols = sql.SQL(", ").join(sql.Identifier(c) for c in (*_COLS, "embedding"))
        self._db.execute(
            sql.SQL(
                "CREATE TEMP TABLE _schedmate_stage ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA"
            ).format(cols, self._t("jobs"))
        )
        with self._db.cursor().copy(sql.SQL("COPY _schedmate_stage ({}) FROM STDIN").format(cols)) as copy:
            for r, v in rows:
                copy.write_row((*_record_to_row(r), v.astype(np.float32)))
        updates = sql.SQL(", ").join(
            sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(c)) for c in (*_COLS[1:], "embedding")
        )
        self._db.execute(
            sql.SQL(
                "INSERT INTO {} ({}) SELECT {} FROM _schedmate_stage ON CONFLICT (job_id) DO UPDATE SET {}"
            ).format(self._t("jobs"), cols, cols, updates)
        )

    def _has_index(self) -> bool:
        row = self._db.execute(
            "SELECT 1 FROM pg_indexes WHERE schemaname = %s AND indexname = %s", (self.schema, _INDEX)
        ).fetchone()
        return row is not None

    def build_index(self) -> None:
        """Build the HNSW index now (the Advisor calls this after importing into a large store).

        Small stores are searched exactly and have no index, so bulk imports are plain COPYs and
        the index is built once, in bulk (parallel workers, memory for the whole graph), which is
        several times faster than growing it row by row. Later inserts maintain it."""
        from psycopg import sql

        dim = self.dim
        if self._indexed or dim is None or dim > HNSW_MAX_DIM:
            return
        with self._lock, self._errors(), self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"schedmate:{self.schema}",))
            if not self._has_index():
                n = self.count()
                need_kb = int(
                    n * (dim * 4 + 512) * 1.3 / 1024
                )  # the graph in memory: vectors + neighbour lists
                row = self._db.execute(
                    "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"
                ).fetchone()
                if row and need_kb > int(row[0]):
                    self._db.execute(
                        sql.SQL("SET LOCAL maintenance_work_mem = {}").format(
                            sql.Literal(f"{min(need_kb, 2 << 20)}kB")
                        )
                    )
                self._db.execute(
                    sql.SQL(
                        "CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding vector_cosine_ops)"
                    ).format(sql.Identifier(_INDEX), self._t("jobs"))
                )
        self._indexed = True

    # -- reads ------------------------------------------------------------------------------
    def _select(self) -> sql.Composable:
        from psycopg import sql

        return sql.SQL(", ").join(
            sql.SQL("{}::text").format(sql.Identifier(c)) if c in _JSON_COLS else sql.Identifier(c)
            for c in _COLS
        )

    def count(self) -> int:
        from psycopg import sql

        with self._lock, self._errors():
            row = self._db.execute(sql.SQL("SELECT count(*) FROM {}").format(self._t("jobs"))).fetchone()
        return int(row[0]) if row else 0

    def get(self, job_id: str) -> JobRecord | None:
        from psycopg import sql

        with self._lock, self._errors():
            row = self._db.execute(
                sql.SQL("SELECT {} FROM {} WHERE job_id = %s").format(self._select(), self._t("jobs")),
                (job_id,),
            ).fetchone()
        return None if row is None else _row_to_record(row)

    def by_user(self, user: str, limit: int = 1000) -> list[JobRecord]:
        from psycopg import sql

        q = sql.SQL("SELECT {} FROM {} WHERE {} = %s ORDER BY id DESC LIMIT %s").format(
            self._select(), self._t("jobs"), sql.Identifier("user")
        )
        with self._lock, self._errors():
            rows = self._db.execute(q, (user, limit)).fetchall()
        return [_row_to_record(r) for r in rows][::-1]

    def durations(self, limit: int = 100_000) -> list[float]:
        from psycopg import sql

        q = sql.SQL(
            "SELECT duration_s FROM {} WHERE duration_s IS NOT NULL ORDER BY id DESC LIMIT %s"
        ).format(self._t("jobs"))
        with self._lock, self._errors():
            return [float(r[0]) for r in self._db.execute(q, (limit,))]

    def records(self) -> Iterator[JobRecord]:
        """Every record in insertion order, fetched a page at a time (keyset pagination)."""
        from psycopg import sql

        q = sql.SQL("SELECT id, {} FROM {} WHERE id > %s ORDER BY id LIMIT %s").format(
            self._select(), self._t("jobs")
        )
        last = 0
        while True:
            with self._lock, self._errors():
                rows = self._db.execute(q, (last, _PAGE)).fetchall()
            for row in rows:
                yield _row_to_record(row[1:])
            if len(rows) < _PAGE:
                return
            last = int(rows[-1][0])

    def search(self, vector: np.ndarray, k: int) -> list[Neighbor]:
        """The k nearest jobs by cosine similarity (exact for small stores, HNSW otherwise)."""
        from psycopg import sql

        if k <= 0:
            return []
        if not self._large:
            n = self.count()
            if n == 0:
                return []
            self._large = n >= self.exact_below
        if self._large and not self._indexed and not self.read_only:
            self.build_index()
        q = _unit_query(vector).astype(np.float32)
        # exact search orders ties by job_id in SQL; the HNSW scan orders by distance only, so a
        # few more candidates are fetched and ties among them are broken by `ranked`
        order = "embedding <=> %(q)s" if self._large else "embedding <=> %(q)s, job_id"
        query = sql.SQL("SELECT {}, embedding <=> %(q)s FROM {} ORDER BY " + order + " LIMIT %(k)s").format(
            self._select(), self._t("jobs")
        )
        with self._lock, self._errors(), self._db.transaction():
            if self._large:
                # the HNSW candidate list must be at least k long to return k rows
                self._db.execute(
                    sql.SQL("SET LOCAL hnsw.ef_search = {}").format(sql.Literal(max(self.ef_search, k)))
                )
            else:
                self._db.execute("SET LOCAL enable_indexscan = off")  # exact: scan and sort
            # a few more candidates than asked, so that ties at the k-th place are broken by job_id
            rows = self._db.execute(query, {"q": q, "k": 2 * k + 16}).fetchall()
        out = []
        for row in rows:
            sim = 1.0 - float(row[-1]) if row[-1] is not None else math.nan
            if math.isfinite(sim):  # a zero vector has no direction: NaN distance
                out.append(Neighbor(_row_to_record(row[:-1]), sim))
        return ranked(out, k)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def drop(self) -> None:
        """Delete this store: its schema and everything in it (tests, and `history` resets)."""
        from psycopg import sql

        with self._lock, self._errors():
            self._db.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(self.schema)))


if TYPE_CHECKING:  # the protocol is structural; this checks it statically
    from schedmate.advisor.history.base import HistoryStore

    _check: type[HistoryStore] = PgvectorHistoryStore
