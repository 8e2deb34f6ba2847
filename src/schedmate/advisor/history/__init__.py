"""The job history: the record and store contract (`base`), the stores (`sqlite`, `memory`, `pg`
for PostgreSQL + pgvector, which imports psycopg only when opened) and the readers of history
files (`formats`: JSONL, sacct --json, cluster traces)."""

from schedmate.advisor.history.base import EXACT_BELOW, HistoryStore, JobRecord, Neighbor
from schedmate.advisor.history.formats import JobLine, LineError, read_jobs, read_sacct_json, read_trace_jobs
from schedmate.advisor.history.memory import InMemoryHistoryStore
from schedmate.advisor.history.pg import PgvectorHistoryStore, is_postgres_url, redact_url
from schedmate.advisor.history.sqlite import SqliteHistoryStore

__all__ = [
    "EXACT_BELOW",
    "HistoryStore",
    "JobRecord",
    "Neighbor",
    "JobLine",
    "LineError",
    "read_jobs",
    "read_sacct_json",
    "read_trace_jobs",
    "InMemoryHistoryStore",
    "PgvectorHistoryStore",
    "is_postgres_url",
    "redact_url",
    "SqliteHistoryStore",
]
