"""OpenAIBackend against a real llama-cpp-python server (SmolLM2-135M) and real dead endpoints."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Literal

import pytest
from pydantic import BaseModel

from schedmate.backends.llm import LLMTransportError, OpenAIBackend, create_llm
from schedmate.core.errors import BackendError, BackendUnavailable
from schedmate.core.settings import LLMSettings

pytestmark = pytest.mark.integration


class LineVerdict(BaseModel):
    kind: Literal["progress", "error", "warning", "info"]
    confidence: float


class ProgressFields(BaseModel):
    """Nullable fields, as the tracker's field mapper asks for (anyOf/null in the schema)."""

    step: str | None = None
    loss: str | None = None


CLASSIFY = [
    {"role": "system", "content": "You classify one line of a training log."},
    {"role": "user", "content": "RuntimeError: CUDA error: out of memory"},
]


@pytest.fixture
def silent_server_url() -> Iterator[str]:
    """Accepts TCP connections (kernel backlog) and never answers: only a timeout ends a request."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def test_real_server_returns_schema_valid_object(llama_server: str) -> None:
    llm = create_llm(LLMSettings(base_url=llama_server, timeout_s=60, max_tokens=96, max_retries=2))
    assert isinstance(llm, OpenAIBackend)
    t0 = time.monotonic()
    verdict = llm.complete_json(CLASSIFY, LineVerdict)
    assert isinstance(verdict, LineVerdict)
    assert verdict.kind in ("progress", "error", "warning", "info")
    assert time.monotonic() - t0 < 30
    assert llm.available and llm.breaker is not None and llm.breaker.state == "closed"


def test_real_server_handles_nullable_fields(llama_server: str) -> None:
    llm = OpenAIBackend(LLMSettings(base_url=llama_server, timeout_s=60, max_tokens=96))
    reply = llm.complete_json(
        [
            {"role": "system", "content": "Copy the step number and the loss from the log line, or null."},
            {"role": "user", "content": "step 100/1000 loss 0.53"},
        ],
        ProgressFields,
    )
    assert isinstance(reply, ProgressFields)


def test_closed_port_raises_backend_error_then_unavailable_quickly(closed_port_url: str) -> None:
    llm = OpenAIBackend(
        LLMSettings(base_url=closed_port_url, timeout_s=5, breaker_failures=2, breaker_reset_s=60)
    )
    t0 = time.monotonic()
    for _ in range(2):
        with pytest.raises(LLMTransportError, match="cannot connect") as info:
            llm.complete_json(CLASSIFY, LineVerdict)
        assert isinstance(info.value, BackendError)
        assert "\n" not in str(info.value)
    assert not llm.available
    with pytest.raises(BackendUnavailable, match="circuit open"):
        llm.complete_json(CLASSIFY, LineVerdict)
    assert time.monotonic() - t0 < 3


def test_timeout_is_honoured(silent_server_url: str) -> None:
    llm = OpenAIBackend(LLMSettings(base_url=silent_server_url, timeout_s=0.5, breaker_failures=1))
    t0 = time.monotonic()
    with pytest.raises(LLMTransportError, match=r"within 0.5 s"):
        llm.complete_json(CLASSIFY, LineVerdict)
    elapsed = time.monotonic() - t0
    assert 0.4 < elapsed < 3, elapsed  # one attempt: the client itself does not retry
    with pytest.raises(BackendUnavailable):
        llm.complete_json(CLASSIFY, LineVerdict)
