"""LLM backends: the shared parse/validate/retry loop and the circuit breaker, driven by a scripted fake."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from schedmate.backends.llm import (
    LLM_BACKENDS,
    CircuitBreaker,
    LLMBackend,
    LLMTransportError,
    OpenAIBackend,
    ScriptedLLMBackend,
    create_llm,
)
from schedmate.core.errors import BackendError, BackendUnavailable, ConfigError, ReplyValidationError
from schedmate.core.settings import LLMSettings


class Verdict(BaseModel):
    kind: Literal["progress", "error", "info"]
    confidence: float = Field(ge=0, le=1)


MESSAGES = [
    {"role": "system", "content": "Classify the line."},
    {"role": "user", "content": "step 3 loss 1.2"},
]


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def test_valid_reply_is_parsed_and_schema_is_given_to_the_model() -> None:
    llm = ScriptedLLMBackend(['{"kind": "progress", "confidence": 0.9}'])
    got = llm.complete_json(MESSAGES, Verdict)
    assert got == Verdict(kind="progress", confidence=0.9)
    assert len(llm.sent) == 1
    system = llm.sent[0][0]
    assert system["role"] == "system"
    assert system["content"].startswith("Classify the line.")
    assert '"confidence"' in system["content"]  # the JSON schema is in the prompt
    assert MESSAGES[0]["content"] == "Classify the line."  # caller's messages untouched


def test_dict_replies_and_code_fences_are_accepted() -> None:
    llm = ScriptedLLMBackend(
        [{"kind": "error", "confidence": 1}, '```json\n{"kind": "info", "confidence": 0}\n```']
    )
    assert llm.complete_json(MESSAGES, Verdict).kind == "error"
    assert llm.complete_json(MESSAGES, Verdict).kind == "info"


def test_no_system_message_gets_one_with_the_schema() -> None:
    llm = ScriptedLLMBackend([{"kind": "error", "confidence": 0.5}])
    llm.complete_json([{"role": "user", "content": "x"}], Verdict)
    assert [m["role"] for m in llm.sent[0]] == ["system", "user"]
    assert "JSON schema" in llm.sent[0][0]["content"]


def test_invalid_json_then_valid_retries_and_feeds_the_error_back() -> None:
    llm = ScriptedLLMBackend(["{kind: progress", '{"kind": "progress", "confidence": 0.7}'], max_retries=2)
    got = llm.complete_json(MESSAGES, Verdict)
    assert got.confidence == 0.7
    assert len(llm.sent) == 2
    second = llm.sent[1]
    assert second[: len(llm.sent[0])] == llm.sent[0]  # the conversation continues
    assert second[-2] == {"role": "assistant", "content": "{kind: progress"}
    assert second[-1]["role"] == "user"
    assert "invalid JSON" in second[-1]["content"]


def test_schema_violation_is_fed_back_with_the_field_name() -> None:
    llm = ScriptedLLMBackend(
        [
            {"kind": "progress", "confidence": 7},
            {"kind": "bogus", "confidence": 0.1},
            {"kind": "info", "confidence": 0.1},
        ]
    )
    assert llm.complete_json(MESSAGES, Verdict).kind == "info"
    assert "confidence" in llm.sent[1][-1]["content"]
    assert "kind" in llm.sent[2][-1]["content"]


def test_always_invalid_raises_reply_validation_error_after_all_retries() -> None:
    llm = ScriptedLLMBackend(["nope", "", '{"kind": "progress"}', "never sent"], max_retries=2)
    with pytest.raises(ReplyValidationError) as info:
        llm.complete_json(MESSAGES, Verdict)
    msg = str(info.value)
    assert "\n" not in msg
    assert "Verdict" in msg and "3 attempts" in msg
    assert "confidence" in msg  # the last reason
    assert len(llm.sent) == 3
    assert llm.remaining == 1


def test_zero_retries_means_one_attempt() -> None:
    llm = ScriptedLLMBackend(["bad"], max_retries=0)
    with pytest.raises(ReplyValidationError, match="after 1 attempt:"):
        llm.complete_json(MESSAGES, Verdict)


def test_scripted_backend_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedLLMBackend([]), LLMBackend)


def test_circuit_breaker_states_with_fake_clock() -> None:
    clock = FakeClock()
    br = CircuitBreaker(failures=2, reset_s=30, clock=clock)
    assert br.state == "closed"
    br.record_failure()
    assert br.state == "closed"
    br.record_success()  # success resets the count
    br.record_failure()
    assert br.state == "closed"
    br.record_failure()
    assert br.state == "open" and not br.allow()
    assert br.retry_in() == pytest.approx(30)
    clock.advance(29.9)
    assert br.state == "open"
    clock.advance(0.2)
    assert br.state == "half-open" and br.allow()
    br.record_failure()  # a failed probe re-opens at once
    assert br.state == "open"
    clock.advance(30)
    br.record_success()
    assert br.state == "closed"


def test_breaker_opens_after_n_transport_failures_and_half_opens_after_reset() -> None:
    clock = FakeClock()
    down = LLMTransportError("scripted: cannot connect")
    llm = ScriptedLLMBackend(
        [down, down, down, '{"kind": "error", "confidence": 0.2}'],
        breaker=CircuitBreaker(failures=3, reset_s=60, clock=clock),
    )
    for _ in range(3):
        assert llm.available
        with pytest.raises(LLMTransportError):
            llm.complete_json(MESSAGES, Verdict)
    assert not llm.available
    with pytest.raises(BackendUnavailable, match="circuit open"):
        llm.complete_json(MESSAGES, Verdict)
    assert len(llm.sent) == 3  # no I/O while open
    clock.advance(60)
    assert llm.available  # half-open: one call goes through
    assert llm.complete_json(MESSAGES, Verdict).kind == "error"
    assert llm.breaker is not None and llm.breaker.state == "closed"


def test_validation_failures_do_not_trip_the_breaker() -> None:
    llm = ScriptedLLMBackend(["x", "y"], max_retries=1, breaker=CircuitBreaker(1, 60, clock=FakeClock()))
    with pytest.raises(ReplyValidationError):
        llm.complete_json(MESSAGES, Verdict)
    assert llm.available


def test_non_transport_backend_errors_propagate_without_tripping() -> None:
    llm = ScriptedLLMBackend([BackendError("HTTP 400")], breaker=CircuitBreaker(1, 60, clock=FakeClock()))
    with pytest.raises(BackendError, match="HTTP 400"):
        llm.complete_json(MESSAGES, Verdict)
    assert llm.available


def test_exhausted_script_is_a_test_bug_not_a_backend_error() -> None:
    llm = ScriptedLLMBackend([])
    with pytest.raises(RuntimeError, match="exhausted"):
        llm.complete_json(MESSAGES, Verdict)


def test_create_llm_returns_none_without_base_url() -> None:
    assert create_llm(LLMSettings()) is None


def test_create_llm_builds_openai_backend_without_network() -> None:
    llm = create_llm(LLMSettings(base_url="http://127.0.0.1:9/v1", breaker_failures=4, breaker_reset_s=5))
    assert isinstance(llm, OpenAIBackend)
    assert llm.available
    assert llm.breaker is not None and llm.breaker.failures == 4 and llm.breaker.reset_s == 5
    assert llm._client is None  # the client is created lazily


def test_unknown_llm_backend_lists_valid_names() -> None:
    with pytest.raises(ConfigError, match="valid: openai"):
        create_llm(LLMSettings(base_url="http://x/v1"), backend="nope")
    assert LLM_BACKENDS.names() == ["openai"]


def test_openai_backend_requires_base_url() -> None:
    with pytest.raises(ConfigError, match="llm.base_url"):
        OpenAIBackend(LLMSettings())
