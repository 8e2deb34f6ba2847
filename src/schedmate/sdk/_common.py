"""Backends chosen by name from validated settings (shared by every SDK operation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from schedmate.core.settings import Settings

if TYPE_CHECKING:
    from schedmate.backends.embedder import Embedder
    from schedmate.backends.llm import LLMBackend

__all__ = ["embedder_of", "llm_of"]


def embedder_of(settings: Settings) -> Embedder | None:
    """The configured embedder, or None when the embedder is 'none' (rules only)."""
    if settings.embedder.backend == "none":
        return None
    from schedmate.backends.embedder import create_embedder

    return create_embedder(settings.embedder)


def llm_of(settings: Settings) -> LLMBackend | None:
    """The configured LLM backend, or None when no LLM server is configured."""
    if not settings.llm.enabled:
        return None
    from schedmate.backends.llm import create_llm

    return create_llm(settings.llm)
