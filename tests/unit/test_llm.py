"""LLM backends: the shared parse/validate/retry loop and the circuit breaker, driven by a scripted fake."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
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


# -- misbehaving servers (a real HTTP server of our own in a thread) -----------------------------
class _Handler:
    """Builds a BaseHTTPRequestHandler class that answers every POST with `body` (optionally
    one byte at a time, `drip_s` apart)."""

    @staticmethod
    def make(body: bytes, content_type: str = "application/json", drip_s: float = 0.0) -> type:
        from http.server import BaseHTTPRequestHandler

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if drip_s:
                        for i in range(len(body)):
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                            time.sleep(drip_s)
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        return H


@contextlib.contextmanager
def _server(handler: type) -> Iterator[str]:
    from http.server import ThreadingHTTPServer

    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}/v1"
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize(
    ("body", "ctype"),
    [
        (b"<html>gateway says hi</html>", "text/html"),
        (b"not json at all", "application/json"),
        (b'{"unexpected": "shape"}', "application/json"),
        (b'{"choices": "nope"}', "application/json"),
    ],
)
def test_http_200_with_a_body_that_is_not_a_chat_reply_is_a_backend_error(body: bytes, ctype: str) -> None:
    with _server(_Handler.make(body, ctype)) as url:
        llm = OpenAIBackend(LLMSettings(base_url=url, timeout_s=5, max_retries=0))
        with pytest.raises(BackendError) as err:
            llm.complete_json(MESSAGES, Verdict)
    assert url in str(err.value) and "\n" not in str(err.value)


def test_a_server_that_drips_one_byte_a_second_is_cut_at_the_deadline() -> None:
    reply = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}]
    }
    body = json.dumps(reply).encode()
    with _server(_Handler.make(body, drip_s=0.2)) as url:  # each read is fast; the whole takes 20 s
        llm = OpenAIBackend(LLMSettings(base_url=url, timeout_s=1.5, max_retries=0))
        t0 = time.monotonic()
        with pytest.raises(LLMTransportError, match="within 1.5 s"):
            llm.complete_json(MESSAGES, Verdict)
        assert time.monotonic() - t0 < 4
