"""The SDK layer between the CLI (or the REST service) and the capabilities.

Builds capability facades from validated settings, with backends chosen by name, and
keeps per-user caches (template decisions, LLM field mappings) under `cache_dir`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from schedmate.core.errors import SchedmateError
from schedmate.core.settings import Settings
from schedmate.core.types import TrackResult
from schedmate.failure import (
    AuditLog,
    ClusterBackend,
    FailureClassifier,
    FailureHandler,
    FailureLocator,
    InMemoryClusterBackend,
    KnowledgeBase,
    RecoveryPlanner,
)
from schedmate.tracker import FieldMapper, LineClassifier, MetricTracker

if TYPE_CHECKING:
    from schedmate.advisor import Advisor

__all__ = [
    "build_tracker",
    "track_files",
    "save_tracker_state",
    "build_failure_handler",
    "build_advisor",
    "advisor_store_path",
]


def _embedder(settings: Settings):  # type: ignore[no-untyped-def]
    if settings.embedder.backend == "none":
        return None
    from schedmate.backends.embedder import create_embedder

    return create_embedder(settings.embedder)


def _llm(settings: Settings):  # type: ignore[no-untyped-def]
    if not settings.llm.enabled:
        return None
    from schedmate.backends.llm import create_llm

    return create_llm(settings.llm)


def _templates_file(settings: Settings) -> Path:
    return Path(settings.cache_dir) / f"templates-{settings.embedder.backend}.json"


def build_tracker(settings: Settings, *, use_cache: bool = True) -> MetricTracker:
    """A MetricTracker wired to the configured embedder and (optional) LLM."""
    classifier = LineClassifier(embedder=_embedder(settings))
    if use_cache:
        # no cache yet, or a corrupt one: decisions are recomputed
        with contextlib.suppress(OSError, ValueError, AttributeError):
            classifier.load_state(json.loads(_templates_file(settings).read_text("utf-8")))
    llm = _llm(settings) if settings.tracker.use_llm else None
    mapper = FieldMapper(
        llm, cache_file=Path(settings.cache_dir) / "field-mappings.json" if use_cache else None
    )
    return MetricTracker(settings.tracker, classifier=classifier, mapper=mapper)


def save_tracker_state(tracker: MetricTracker, settings: Settings) -> None:
    """Persist template decisions so the next run does not re-embed known patterns."""
    path = _templates_file(settings)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(tracker.classifier.save_state()), "utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a cache is best effort


def track_files(
    tracker: MetricTracker, paths: Iterable[str | Path], *, live: bool = True
) -> Iterator[TrackResult]:
    """Track each file; a file that cannot be read yields a result with `error` set."""
    for p in paths:
        try:
            yield tracker.track_file(p, live=live)
        except SchedmateError as exc:
            yield TrackResult(file=str(p), error=str(exc))
        except OSError as exc:
            yield TrackResult(file=str(p), error=f"{p}: {exc.strerror or exc}")


def build_failure_handler(
    settings: Settings,
    backend: ClusterBackend | None = None,
    *,
    plan: bool = True,
) -> FailureHandler:
    """A FailureHandler: tracker's line classifier for the search, the signature KB, the
    embedder and LLM for uncertain cases, and a recovery planner over `backend`
    (in-memory by default: the plan is computed and audited, nothing is executed)."""
    fs = settings.failure
    kb = KnowledgeBase.load(fs.signatures_file or None)
    embedder = _embedder(settings)
    locator = FailureLocator(LineClassifier(embedder=None), kb, fs)
    classifier = FailureClassifier(kb, embedder, _llm(settings), llm_below=fs.llm_below)
    planner = None
    if plan:
        audit_path = Path(fs.audit_log) if fs.audit_log else Path(settings.cache_dir) / "audit.jsonl"
        planner = RecoveryPlanner(backend or InMemoryClusterBackend(), AuditLog(audit_path), fs)
    return FailureHandler(locator, classifier, planner, fs)


def advisor_store_path(settings: Settings, store: str | Path | None = None) -> Path | str:
    """The history store: a `postgresql://` URL as given (a pgvector store), else a file: the
    explicit one, the configured one, or cache_dir/history.db."""
    from schedmate.advisor.store_pg import is_postgres_url

    location = store or settings.advisor.store
    if is_postgres_url(location):
        return str(location)
    return Path(location) if location else Path(settings.cache_dir) / "history.db"


def build_advisor(settings: Settings, store: str | Path | None = None) -> Advisor:
    """An Advisor over the history store (SQLite file, or PostgreSQL + pgvector for a URL), the
    configured embedder (lexical hashing when the embedder is 'none') and, when an LLM is
    configured, the metadata agent."""
    from schedmate.advisor import Advisor, HistoryStore, SqliteHistoryStore
    from schedmate.backends.embedder import CachedEmbedder, HashEmbedder

    embedder = _embedder(settings) or HashEmbedder()
    if not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder, settings.embedder.cache_size)
    location = advisor_store_path(settings, store)
    history: HistoryStore
    if isinstance(location, str):
        from schedmate.advisor.store_pg import PgvectorHistoryStore

        history = PgvectorHistoryStore(location, embedder_name=embedder.name)
    else:
        history = SqliteHistoryStore(location, embedder_name=embedder.name)
    agent = None
    llm = _llm(settings) if settings.advisor.use_agent else None
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
