"""SDK operations of the Scheduling Advisor: import a history, advise jobs, describe a store.

Every function takes validated Settings and returns the contract dataclasses (`ImportReport`,
`Advice`, `HistoryStats`); the CLI only parses options and prints. The Advisor is imported
inside the functions, so importing this module (and `schedmate --help`) stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from schedmate.core.errors import InputError
from schedmate.core.settings import Settings
from schedmate.core.types import SCHEMA_VERSION
from schedmate.sdk._common import embedder_of, llm_of

if TYPE_CHECKING:  # the contract types, re-exported for the CLI (which may not import the advisor)
    from schedmate.advisor import Advice as Advice
    from schedmate.advisor import Advisor as Advisor
    from schedmate.advisor import ImportReport as ImportReport
    from schedmate.advisor import JobRecord as JobRecord
    from schedmate.advisor import LineError as LineError

__all__ = [
    "HISTORY_FORMATS",
    "HistoryStats",
    "advise",
    "advisor_store_path",
    "build_advisor",
    "history_stats",
    "import_history",
    "job_from_code",
    "read_batch",
    "shown_store",
]

HISTORY_FORMATS = ("jsonl", "sacct")  # plus the simulator's trace formats


@dataclass(frozen=True)
class HistoryStats:
    """The `history stats --json` contract."""

    store: str
    jobs: int
    embedder: str | None
    calibration: dict[str, float] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        import math

        return {
            "schema_version": SCHEMA_VERSION,
            "store": self.store,
            "jobs": self.jobs,
            "embedder": self.embedder,
            "calibration": {k: v for k, v in self.calibration.items() if math.isfinite(v)},
        }


def advisor_store_path(settings: Settings, store: str | Path | None = None) -> Path | str:
    """The history store: a `postgresql://` URL as given (a pgvector store), else a file: the
    explicit one, the configured one, or cache_dir/history.db."""
    from schedmate.advisor.extract.paths import plausible_path
    from schedmate.advisor.history.pg import is_postgres_url

    location = store or settings.advisor.store
    if is_postgres_url(location):
        return str(location)
    path = Path(location) if location else Path(settings.cache_dir) / "history.db"
    if not plausible_path(path):
        raise InputError(f"history store {str(path)[:80]!r}...: not a usable file name")
    return path


def shown_store(location: Path | str) -> str:
    """A store location fit to print: a URL loses its password."""
    from schedmate.advisor.history.pg import redact_url

    return redact_url(location) if isinstance(location, str) else str(location)


def build_advisor(settings: Settings, store: str | Path | None = None, *, read_only: bool = False) -> Advisor:
    """An Advisor over the history store (SQLite file, or PostgreSQL + pgvector for a URL), the
    configured embedder (lexical hashing only when the embedder is 'none') and, when an LLM is
    configured, the metadata agent. `read_only=True` never writes to the store (advise)."""
    from schedmate.advisor import Advisor, HistoryStore, InMemoryHistoryStore, SqliteHistoryStore
    from schedmate.backends.embedder import CachedEmbedder, Embedder, HashEmbedder

    configured = embedder_of(settings)
    # `is None`, not `or`: an empty CachedEmbedder has len() 0 and is falsy (the Advisor ran on
    # hash embeddings for a whole release because of `embedder_of(settings) or HashEmbedder()`)
    embedder: Embedder = HashEmbedder() if configured is None else configured
    if not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder, settings.embedder.cache_size)
    location = advisor_store_path(settings, store)
    history: HistoryStore
    if isinstance(location, str):
        from schedmate.advisor.history.pg import PgvectorHistoryStore

        history = PgvectorHistoryStore(location, embedder_name=embedder.name, read_only=read_only)
    elif read_only and not location.exists() and not store:
        history = InMemoryHistoryStore()  # no history yet: metadata-only predictions, nothing written
    else:
        history = SqliteHistoryStore(location, embedder_name=embedder.name, read_only=read_only)
    agent = None
    llm = llm_of(settings) if settings.advisor.use_agent else None
    if llm is not None:
        from schedmate.advisor.agent import MetadataAgent

        a = settings.advisor
        agent = MetadataAgent(
            llm,
            max_steps=a.agent_max_steps,
            max_prompt_chars=a.agent_max_prompt_chars,
            max_observation_chars=a.agent_max_observation_chars,
        )
    return Advisor(history, embedder, settings.advisor, agent=agent)


def read_history(path: Path, fmt: str = "jsonl") -> tuple[Iterable[JobRecord | LineError], int | None]:
    """The jobs of a history file (jsonl, sacct or a trace format) and, when cheap to know, how many."""
    from schedmate.advisor.history import read_jobs, read_sacct_json, read_trace_jobs

    if fmt == "jsonl":
        return read_jobs(path, need_duration=True), None
    if fmt == "sacct":
        items = list(read_sacct_json(path))
        return items, len(items)
    from schedmate.sim.trace import TRACE_FORMATS

    if fmt not in TRACE_FORMATS:
        raise InputError(f"--format {fmt!r}: use jsonl, sacct or one of {', '.join(sorted(TRACE_FORMATS))}")
    return read_trace_jobs(path, fmt), None


def import_history(
    settings: Settings,
    file: Path,
    *,
    fmt: str = "jsonl",
    store: str | Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import past jobs (extract metadata from their code, embed, store). One bad line or job is
    an entry of the report's `errors`; the import goes on."""
    from schedmate.advisor import SqliteHistoryStore

    items, _total = read_history(file, fmt)
    location = advisor_store_path(settings, store)
    new_file = isinstance(location, Path) and not location.exists()
    advisor = build_advisor(settings, store)
    report = None
    try:
        report = advisor.import_jobs(items, progress=progress)
        report.store = shown_store(location)
        report.stored_total = advisor.store.count()
    finally:
        advisor.store.close()
        if (
            new_file
            and (report is None or report.stored_total == 0)
            and isinstance(advisor.store, SqliteHistoryStore)
        ):
            advisor.store.delete_files()  # a later `advise` would take an empty store for a history
    return report


def history_stats(settings: Settings, store: str | Path | None = None) -> HistoryStats:
    """How many jobs a store holds, with which embedder, and the metadata fallback's calibration."""
    location = advisor_store_path(settings, store)
    if isinstance(location, Path) and not location.exists():
        raise InputError(f"{location}: no history store yet (run `schedmate history import FILE.jsonl`)")
    advisor = build_advisor(settings, store, read_only=True)
    try:
        return HistoryStats(
            store=shown_store(location),
            jobs=advisor.store.count(),
            embedder=advisor.store.get_meta("embedder"),
            calibration=advisor.calibration(),
        )
    finally:
        advisor.store.close()


def job_from_code(
    code: Path,
    *,
    command: str | None = None,
    n_gpus: int | None = None,
    n_nodes: int | None = None,
    gpu_model: str | None = None,
    user: str | None = None,
    name: str | None = None,
    config_files: Iterable[str] = (),
) -> JobRecord:
    """A job to advise on from its code directory and what the scheduler will give it."""
    from schedmate.advisor import JobRecord
    from schedmate.advisor.extract.paths import plausible_path

    if not plausible_path(code) or not code.is_dir():
        raise InputError(f"--code {str(code)[:200]}: not a directory")
    root = code.resolve()
    return JobRecord(
        job_id=name or root.name,
        n_gpus=n_gpus,
        n_nodes=n_nodes,
        gpu_model=gpu_model,
        user=user,
        name=name,
        code_dir=str(root),
        command=command,
        config_files=tuple(config_files),
    )


def read_batch(path: Path) -> Iterator[JobRecord | LineError]:
    """Jobs to advise on, one JSON object a line (a FIFO, a device or /dev/zero is refused)."""
    from schedmate.advisor.history import read_jobs
    from schedmate.inputs import MAX_TABLE_BYTES, check_regular

    check_regular(path, what="job file", max_bytes=MAX_TABLE_BYTES)  # refused now, not at the first job
    return read_jobs(path, need_duration=False)


def advise(
    settings: Settings,
    jobs: Iterable[JobRecord | LineError],
    *,
    store: str | Path | None = None,
    source: str = "batch",
    warn: Callable[[str], None] | None = None,
) -> Iterator[Advice]:
    """One `Advice` per job, in order (a bad line of a batch is an Advice with only `error`).
    The store is opened read-only: advising never writes to it."""
    from schedmate.advisor import Advice, LineError

    location = advisor_store_path(settings, store)
    if store and isinstance(location, Path) and not location.exists():
        raise InputError(f"{location}: no such history store (create it with `schedmate history import`)")
    advisor = build_advisor(settings, store, read_only=True)
    try:
        if warn is not None and advisor.store.count() == 0:
            warn("the history store is empty: predictions fall back to metadata only")
        for item in jobs:
            if isinstance(item, LineError):
                yield Advice(job_id=f"{source}:{item.line}", metadata=None, error=str(item))
            else:
                yield advisor.advise(item)
    finally:
        advisor.store.close()
