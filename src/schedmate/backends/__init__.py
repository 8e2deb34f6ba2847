"""Pluggable backends behind role interfaces: `LLMBackend` (chat -> validated JSON) and
`Embedder` (texts -> unit vectors), each with a fake for tests and a registry by name."""

from __future__ import annotations

from schedmate.backends.embedder import (
    EMBEDDERS,
    CachedEmbedder,
    Embedder,
    HashEmbedder,
    MiniLMEmbedder,
    OpenAIEmbedder,
    create_embedder,
    normalize_rows,
)
from schedmate.backends.llm import (
    LLM_BACKENDS,
    CircuitBreaker,
    JSONReplyBackend,
    LLMBackend,
    LLMTransportError,
    OpenAIBackend,
    ScriptedLLMBackend,
    create_llm,
)

__all__ = [
    "EMBEDDERS",
    "LLM_BACKENDS",
    "CachedEmbedder",
    "CircuitBreaker",
    "Embedder",
    "HashEmbedder",
    "JSONReplyBackend",
    "LLMBackend",
    "LLMTransportError",
    "MiniLMEmbedder",
    "OpenAIBackend",
    "OpenAIEmbedder",
    "ScriptedLLMBackend",
    "create_embedder",
    "create_llm",
    "normalize_rows",
]
