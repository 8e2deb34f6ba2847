"""The one place that builds an OpenAI-compatible client (lazy import, our retry policy)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from schedmate.core.errors import ConfigError

if TYPE_CHECKING:
    import openai

__all__ = ["make_openai_client"]


def make_openai_client(base_url: str, api_key: str, timeout_s: float, purpose: str) -> openai.OpenAI:
    """A client with `max_retries=0`: retries are ours (validation feedback, circuit breaker)."""
    try:
        import openai
    except ImportError:
        raise ConfigError(f"the {purpose} needs the 'openai' package: pip install schedmate") from None
    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
