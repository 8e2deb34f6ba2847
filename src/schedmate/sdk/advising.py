"""SDK operations of the Scheduling Advisor: the history store and the Advisor from settings."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from schedmate.core.settings import Settings
from schedmate.sdk._common import embedder_of, llm_of

if TYPE_CHECKING:
    from schedmate.advisor import Advisor

__all__ = ["advisor_store_path", "build_advisor"]


def advisor_store_path(settings: Settings, store: str | Path | None = None) -> Path | str:
    """The history store: a `postgresql://` URL as given (a pgvector store), else a file: the
    explicit one, the configured one, or cache_dir/history.db."""
    from schedmate.advisor.history.pg import is_postgres_url

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

    embedder = embedder_of(settings) or HashEmbedder()
    if not isinstance(embedder, CachedEmbedder):
        embedder = CachedEmbedder(embedder, settings.embedder.cache_size)
    location = advisor_store_path(settings, store)
    history: HistoryStore
    if isinstance(location, str):
        from schedmate.advisor.history.pg import PgvectorHistoryStore

        history = PgvectorHistoryStore(location, embedder_name=embedder.name)
    else:
        history = SqliteHistoryStore(location, embedder_name=embedder.name)
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
