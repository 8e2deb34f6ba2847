"""LLM backends that answer with a validated pydantic object, behind a circuit breaker.

Errors caused by the model (invalid JSON, schema mismatch) are fed back to the model and
retried; errors of the transport (refused, timeout, 5xx) count against a circuit breaker
so that, while the server is down, callers get `BackendUnavailable` at once and degrade
to rules instead of waiting on every line.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ValidationError

from schedmate.backends.openai_client import make_openai_client
from schedmate.core.errors import BackendError, BackendUnavailable, ConfigError, ReplyValidationError
from schedmate.core.settings import LLMSettings
from schedmate.registry import Registry

if TYPE_CHECKING:
    import openai

__all__ = [
    "LLMBackend",
    "LLMTransportError",
    "CircuitBreaker",
    "JSONReplyBackend",
    "OpenAIBackend",
    "ScriptedLLMBackend",
    "LLM_BACKENDS",
    "create_llm",
    "parse_reply",
]

M = TypeVar("M", bound=BaseModel)
Message = dict[str, str]

_MAX_FEEDBACK_CHARS = 2000
_MAX_REASON_CHARS = 300


@runtime_checkable
class LLMBackend(Protocol):
    """A chat model that returns an instance of a given pydantic model, or raises BackendError."""

    name: str

    @property
    def available(self) -> bool:
        """False while the backend is known to be down (callers skip it and use rules)."""
        ...

    def complete_json(self, messages: list[Message], schema_model: type[M]) -> M:
        """Ask the model; return a validated `schema_model` instance."""
        ...


class LLMTransportError(BackendError):
    """The server could not be reached or failed (refused, timeout, 5xx); counts for the breaker."""


class CircuitBreaker:
    """closed -> open after `failures` consecutive failures -> half-open after `reset_s`.

    Half-open lets calls through: the first success closes the breaker, a failure re-opens it.
    The clock is injectable so tests need not sleep.
    """

    def __init__(self, failures: int, reset_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        if failures < 1 or reset_s <= 0:
            raise ConfigError(
                f"circuit breaker needs failures >= 1 and reset_s > 0, got {failures}, {reset_s}"
            )
        self.failures = failures
        self.reset_s = reset_s
        self._clock = clock
        self._lock = threading.Lock()
        self._consecutive = 0
        self._opened_at: float | None = None

    @property
    def state(self) -> str:
        """'closed', 'open' or 'half-open' (open whose reset time has passed)."""
        with self._lock:
            return self._state()

    def _state(self) -> str:
        if self._opened_at is None:
            return "closed"
        return "half-open" if self._clock() - self._opened_at >= self.reset_s else "open"

    def allow(self) -> bool:
        """True unless open: a call may go to the network."""
        return self.state != "open"

    def retry_in(self) -> float:
        """Seconds until an open breaker half-opens (0 when not open)."""
        with self._lock:
            if self._opened_at is None:
                return 0.0
            return max(0.0, self.reset_s - (self._clock() - self._opened_at))

    def record_success(self) -> None:
        with self._lock:
            self._consecutive = 0
            self._opened_at = None

    def record_failure(self) -> None:
        with self._lock:
            self._consecutive += 1
            if self._state() == "half-open" or self._consecutive >= self.failures:
                self._opened_at = self._clock()


@lru_cache(maxsize=256)
def _schema_of(schema_model: type[BaseModel]) -> dict[str, Any]:
    return schema_model.model_json_schema()


def _one_line(text: str, limit: int = _MAX_REASON_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _strip_fences(text: str) -> str:
    """Models without grammar support often wrap JSON in ```json fences; drop them."""
    t = text.strip()
    if t.startswith("```"):
        t = t.split("\n", 1)[1] if "\n" in t else ""
        if t.rstrip().endswith("```"):
            t = t.rstrip()[:-3]
    return t.strip()


def _validation_reason(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:3]:
        if err["type"] == "json_invalid":
            parts.append(f"invalid JSON ({err['msg']})")
            continue
        loc = ".".join(str(p) for p in err["loc"]) or "reply"
        parts.append(f"{loc}: {err['msg']}")
    more = len(exc.errors()) - 3
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def parse_reply(raw: str, schema_model: type[M]) -> M:
    """Validate a raw reply against `schema_model`; raise ValueError with a short reason."""
    text = _strip_fences(raw)
    if not text:
        raise ValueError("empty reply")
    try:
        return schema_model.model_validate_json(text)
    except ValidationError as exc:
        raise ValueError(_validation_reason(exc)) from None


def _with_schema_instruction(messages: Sequence[Message], schema_model: type[BaseModel]) -> list[Message]:
    """Tell the model the schema in words too: servers that ignore `schema` still get it."""
    hint = "Reply with only a JSON object matching this JSON schema: " + json.dumps(
        _schema_of(schema_model), separators=(",", ":")
    )
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content', '')}\n\n{hint}".strip()
    else:
        out.insert(0, {"role": "system", "content": hint})
    return out


class JSONReplyBackend(ABC):
    """The shared loop: breaker check -> send -> parse/validate -> feed errors back -> retry.

    Subclasses only implement `_send` (one raw reply for one conversation).
    """

    name: str = "llm"

    def __init__(self, max_retries: int, breaker: CircuitBreaker | None = None) -> None:
        self.max_retries = max_retries
        self.breaker = breaker

    @property
    def available(self) -> bool:
        return self.breaker is None or self.breaker.allow()

    @abstractmethod
    def _send(self, messages: list[Message], schema_model: type[BaseModel]) -> str:
        """Return the model's raw reply text; raise LLMTransportError/BackendError on failure."""

    def _guarded_send(self, messages: list[Message], schema_model: type[BaseModel]) -> str:
        if self.breaker is not None and not self.breaker.allow():
            raise BackendUnavailable(
                f"{self.name}: circuit open after {self.breaker.failures} consecutive failures; "
                f"retrying in {self.breaker.retry_in():.0f} s"
            )
        try:
            raw = self._send(messages, schema_model)
        except LLMTransportError:
            if self.breaker is not None:
                self.breaker.record_failure()
            raise
        if self.breaker is not None:
            self.breaker.record_success()
        return raw

    def complete_json(self, messages: list[Message], schema_model: type[M]) -> M:
        """Return a validated `schema_model`; model mistakes are retried up to `max_retries` times."""
        convo = _with_schema_instruction(messages, schema_model)
        attempts = self.max_retries + 1
        reason = ""
        for _ in range(attempts):
            raw = self._guarded_send(convo, schema_model)
            try:
                return parse_reply(raw, schema_model)
            except ValueError as exc:
                reason = str(exc)
            convo = [
                *convo,
                {"role": "assistant", "content": raw[:_MAX_FEEDBACK_CHARS]},
                {
                    "role": "user",
                    "content": f"That reply was invalid: {reason}. "
                    "Answer again with only a JSON object that matches the schema.",
                },
            ]
        raise ReplyValidationError(
            f"{self.name}: reply did not match {schema_model.__name__} after {attempts} "
            f"attempt{'s' if attempts > 1 else ''}: {_one_line(reason)}"
        )


class OpenAIBackend(JSONReplyBackend):
    """Any OpenAI-compatible chat server (llama.cpp, vLLM, Ollama, SGLang) via the `openai` client."""

    name = "openai"

    def __init__(
        self,
        settings: LLMSettings,
        *,
        breaker: CircuitBreaker | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not settings.base_url:
            raise ConfigError("llm.base_url is empty: the OpenAI backend needs a server URL ending in /v1")
        super().__init__(
            settings.max_retries,
            breaker or CircuitBreaker(settings.breaker_failures, settings.breaker_reset_s, clock),
        )
        self.settings = settings
        self._client: openai.OpenAI | None = None
        self._client_lock = threading.Lock()

    def _get_client(self) -> openai.OpenAI:
        with self._client_lock:
            if self._client is None:
                s = self.settings
                self._client = make_openai_client(s.base_url, s.api_key, s.timeout_s, "LLM backend")
            return self._client

    def _reset_client(self) -> None:
        """Drop the client (and its connections): a reply cut at the deadline may still be in flight."""
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def _send(self, messages: list[Message], schema_model: type[BaseModel]) -> str:
        """One request, bounded as a whole by `timeout_s` (the HTTP client's timeout bounds each
        read, so a server that drips one byte a second would hold it forever): the request runs
        in a worker thread that is abandoned, and its connection closed, at the deadline."""
        s = self.settings
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["reply"] = self._request(messages, schema_model)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc

        worker = threading.Thread(target=call, name="schedmate-llm-call", daemon=True)
        worker.start()
        worker.join(s.timeout_s)
        if worker.is_alive():
            self._reset_client()
            raise LLMTransportError(
                f"{self.name}: no complete reply from {s.base_url} within {s.timeout_s:g} s"
            )
        if "error" in box:
            raise box["error"]
        reply: str = box["reply"]
        return reply

    def _request(self, messages: list[Message], schema_model: type[BaseModel]) -> str:
        import openai

        client = self._get_client()
        url = self.settings.base_url
        try:
            resp = client.chat.completions.create(  # type: ignore[call-overload]  # llama.cpp extras
                model=self.settings.model,
                messages=messages,
                temperature=self.settings.temperature,
                max_tokens=self.settings.max_tokens,
                # llama.cpp: "json_object" + "schema" becomes a grammar ("json_schema" is refused);
                # its default repeat_penalty 1.1 breaks grammar-constrained JSON.
                response_format={"type": "json_object", "schema": _schema_of(schema_model)},
                extra_body={"repeat_penalty": 1.0},
            )
        except openai.APITimeoutError:
            raise LLMTransportError(
                f"{self.name}: no reply from {url} within {self.settings.timeout_s:g} s"
            ) from None
        except openai.APIConnectionError as exc:
            raise LLMTransportError(
                f"{self.name}: cannot connect to {url}: {_one_line(str(exc), 120)}"
            ) from None
        except openai.APIStatusError as exc:
            msg = f"{self.name}: HTTP {exc.status_code} from {url}: {_one_line(exc.message, 160)}"
            if exc.status_code >= 500:
                raise LLMTransportError(msg) from None
            raise BackendError(msg) from None
        except openai.OpenAIError as exc:
            raise BackendError(f"{self.name}: {_one_line(str(exc), 200)}") from None
        except (ValueError, TypeError, KeyError, AttributeError) as exc:  # a body the client cannot parse
            raise LLMTransportError(
                f"{self.name}: {url} answered HTTP 200 with a body that is not a chat completion "
                f"({type(exc).__name__})"
            ) from None
        return _content_of(resp, self.name, url)


def _content_of(resp: Any, name: str, url: str) -> str:
    """The first choice's text of a chat completion; anything else (an HTML page, a JSON object
    of another shape: a proxy or a wrong URL answering 200) is a transport error naming the URL."""
    choices = getattr(resp, "choices", None)
    if not isinstance(choices, list):
        raise LLMTransportError(
            f"{name}: {url} answered HTTP 200 with a body that is not a chat completion "
            f"({_one_line(str(resp), 80) if isinstance(resp, str) else type(resp).__name__})"
        )
    if not choices:
        return ""
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise LLMTransportError(f"{name}: {url} answered a chat completion whose content is not text")
    return content or ""


class ScriptedLLMBackend(JSONReplyBackend):
    """A fake for tests: replies in order (str/dict parsed like real replies, exceptions raised).

    Records every conversation it was sent in `sent`, so tests can check the feedback.
    """

    name = "scripted"

    def __init__(
        self,
        replies: Sequence[str | dict[str, Any] | Exception],
        *,
        max_retries: int = 2,
        breaker: CircuitBreaker | None = None,
    ) -> None:
        super().__init__(max_retries, breaker)
        self.replies = list(replies)
        self.sent: list[list[Message]] = []

    @property
    def remaining(self) -> int:
        return len(self.replies)

    def _send(self, messages: list[Message], schema_model: type[BaseModel]) -> str:
        self.sent.append([dict(m) for m in messages])
        if not self.replies:
            raise RuntimeError(f"ScriptedLLMBackend: script exhausted after {len(self.sent) - 1} replies")
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply if isinstance(reply, str) else json.dumps(reply)


LLM_BACKENDS: Registry[LLMBackend] = Registry("LLM backend")
LLM_BACKENDS.register("openai")(OpenAIBackend)


def create_llm(settings: LLMSettings, backend: str = "openai") -> LLMBackend | None:
    """The configured LLM backend, or None when no server is configured (rules only)."""
    if not settings.enabled:
        return None
    return LLM_BACKENDS.create(backend, settings)
