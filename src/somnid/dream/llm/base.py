"""What every LLM backend of the dream shares: the ChatBackend protocol, its result and usage
types, the LLMError tree, and the one place that normalises an assistant message.

Wire shapes are plain OpenAI chat-completions: messages with roles system / user /
assistant (+ ``tool_calls``, ``reasoning_content``) / tool (+ ``tool_call_id``); tools as
``{"type": "function", "function": {"name", "description", "parameters"}}``.

    LLMError              a chat call failed; the dream stops and resumes next time
    ├── LLMUnavailable    no host connected / endpoint unreachable / socket lost / 5xx, 429
    ├── LLMTimeout        no answer within the per-request timeout
    ├── LLMBadResponse    an answer that is not a chat reply (not JSON, no message, ...)
    └── LLMRejected       the LLM side refused the request (HTTP 4xx, ``llm.error`` frame)

These are not ``SomnidError``s: they never reach an HTTP client; the dream loop maps them.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from somnid.memory.text import valid_text

__all__ = [
    "ChatBackend",
    "ChatOptions",
    "ChatResult",
    "LLMBadResponse",
    "LLMError",
    "LLMRejected",
    "LLMTimeout",
    "LLMUnavailable",
    "Usage",
    "parse_assistant_message",
    "parse_chat_reply",
]


class LLMError(Exception):
    """A chat call failed. The message is safe to log and to show (never holds a key)."""


class LLMUnavailable(LLMError):
    """No LLM to talk to: no host connected, endpoint unreachable or overloaded, socket lost."""


class LLMTimeout(LLMError):
    """The LLM did not answer within the per-request timeout."""


class LLMBadResponse(LLMError):
    """The answer was not a chat reply of the expected shape."""


class LLMRejected(LLMError):
    """The LLM side answered with an error for this request (HTTP 4xx, ``llm.error``)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one or more chat calls; ``cached_tokens`` is part of ``prompt_tokens``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.cached_tokens + other.cached_tokens,
        )

    @classmethod
    def from_wire(cls, raw: object) -> Usage:
        """Lenient: missing or non-numeric counts are 0. Cached tokens come from
        ``cached_tokens``, OpenAI's ``prompt_tokens_details.cached_tokens`` or DeepSeek's
        ``prompt_cache_hit_tokens``, whichever is present."""
        if not isinstance(raw, Mapping):
            return cls()
        details = raw.get("prompt_tokens_details")
        cached = raw.get("cached_tokens")
        if cached is None and isinstance(details, Mapping):
            cached = details.get("cached_tokens")
        if cached is None:
            cached = raw.get("prompt_cache_hit_tokens")
        return cls(
            _count(raw.get("prompt_tokens")),
            _count(raw.get("completion_tokens")),
            _count(cached),
        )


MAX_TOKENS_COUNTED = 10_000_000
"""More tokens than any one answer holds: a larger count (1e308, from a broken host) is 0."""


def _count(value: object) -> int:
    """A token count as a host reports it: 0 for anything that is not a finite number of
    at most :data:`MAX_TOKENS_COUNTED` (``Infinity`` and ``NaN`` took the socket down)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0  # a JSON integer has no bound: compared as it is, never made a float
    return int(value) if 0 <= value <= MAX_TOKENS_COUNTED else 0


@dataclass(frozen=True, slots=True)
class ChatOptions:
    """How to answer one chat: sampling, the length cap, and a structured-output request.

    ``response_format`` is OpenAI's (``{"type": "json_schema", "json_schema": {...}}`` or
    ``{"type": "json_object"}``); a backend that cannot pass it on ignores it, and the
    caller validates the answer either way. ``None`` leaves a value to the server."""

    max_tokens: int | None = None
    temperature: float | None = None
    frequency_penalty: float | None = None
    response_format: dict[str, Any] | None = None
    timeout_s: float | None = None
    """How long this request may take, when not the backend's configured timeout (a
    longer prompt takes longer on a slow machine); never sent to the server."""

    def wire(self) -> dict[str, Any]:
        """The options as request fields (OpenAI names), leaving out those not set."""
        fields = {
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "frequency_penalty": self.frequency_penalty,
            "response_format": self.response_format,
        }
        return {key: value for key, value in fields.items() if value is not None}


FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter"})


@dataclass(frozen=True, slots=True)
class ChatResult:
    """One answer: the assistant message (OpenAI shape, ready to append), its usage, and
    why generation stopped (``stop``, ``length``, ``tool_calls``, ``content_filter``;
    ``None`` when the backend did not say)."""

    message: dict[str, Any]
    usage: Usage
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        """Cut by the length cap: the text (or JSON) is incomplete."""
        return self.finish_reason == "length"


def finish_reason_of(raw: object) -> str | None:
    return raw if isinstance(raw, str) and raw in FINISH_REASONS else None


class ChatBackend(Protocol):
    """Something that answers chat-completions requests for the dream.

    ``chat`` raises LLMError (never anything else for an LLM-side failure) and is
    cancellable: cancelling the awaiting task aborts the request in flight.
    """

    @property
    def name(self) -> str: ...

    def available(self) -> bool:
        """Can a chat be attempted now? (bridge: a host is connected; others: configured)"""
        ...

    async def probe(self) -> str | None:
        """Is the LLM reachable right now? ``None`` if so, else why not (one short line).
        Cheap and quick (a few seconds at most); never raises."""
        ...

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
    ) -> ChatResult: ...


def parse_assistant_message(raw: object, source: str) -> dict[str, Any]:
    """The assistant message of a reply, normalised: ``role`` "assistant", ``content`` a
    string ("" when absent), ``reasoning_content`` kept when present, ``tool_calls`` (only
    when non-empty) each ``{id, type: "function", function: {name, arguments: str}}``.
    Other keys are dropped so the message can be sent back to any server as is."""
    if not isinstance(raw, Mapping):
        raise LLMBadResponse(f"{source} answered without a message object")
    message: dict[str, Any] = {"role": "assistant", "content": _text(raw.get("content"))}
    reasoning = raw.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        message["reasoning_content"] = valid_text(reasoning)
    calls = raw.get("tool_calls")
    if calls:
        if not isinstance(calls, list):
            raise LLMBadResponse(f"{source} sent tool_calls that are not a list")
        message["tool_calls"] = [_tool_call(call, source) for call in calls]
    return message


def parse_chat_reply(body: object, source: str) -> ChatResult:
    """A ``{message, usage}`` reply (the bridge's and the callback's shape)."""
    if not isinstance(body, Mapping):
        raise LLMBadResponse(f"{source} answered with something other than a JSON object")
    return ChatResult(
        parse_assistant_message(body.get("message"), source),
        Usage.from_wire(body.get("usage")),
        finish_reason_of(body.get("finish_reason")),
    )


def _text(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return valid_text(content)
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [p.get("text") for p in content if isinstance(p, Mapping)]
        return valid_text("".join(p for p in parts if isinstance(p, str)))
    return valid_text(str(content))


def _tool_call(raw: object, source: str) -> dict[str, Any]:
    function = raw.get("function") if isinstance(raw, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    if not isinstance(raw, Mapping) or not isinstance(function, Mapping):
        raise LLMBadResponse(f"{source} sent a tool call without a function")
    if not isinstance(name, str) or not name:
        raise LLMBadResponse(f"{source} sent a tool call without a function name")
    arguments = function.get("arguments")
    if arguments is None:
        arguments = "{}"
    elif not isinstance(arguments, str):  # some servers send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    call_id = raw.get("id")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"call_{uuid.uuid4().hex[:12]}"  # the loop pairs results by id
    function = {"name": valid_text(name), "arguments": valid_text(arguments)}
    return {"id": valid_text(call_id), "type": "function", "function": function}
