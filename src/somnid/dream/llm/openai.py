"""``dream.llm = "openai"``: somnid calls an OpenAI-compatible chat-completions endpoint.

``POST {base_url}/chat/completions`` with ``model``, ``messages`` and, when there are tools,
``tools`` and ``tool_choice: "auto"`` (servers refuse ``tool_choice`` without tools), and
the chat's options (``max_tokens``, ``temperature``, ``frequency_penalty``,
``response_format``). ``finish_reason`` is passed on: ``length`` means the answer was cut. Works
with OpenAI, DeepSeek and local servers (llama.cpp, Ollama, vLLM); the key, if any, is sent
as ``Authorization: Bearer``. ``choices[0].message`` becomes the assistant message; usage
includes ``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from somnid.dream.llm.base import (
    ChatOptions,
    ChatResult,
    LLMBadResponse,
    LLMRejected,
    LLMUnavailable,
    Usage,
    finish_reason_of,
    parse_assistant_message,
)
from somnid.dream.llm.probe import Probe
from somnid.dream.llm.retry import HttpPoster, RetryPolicy

__all__ = ["OpenAIBackend"]


class OpenAIBackend:
    """``api_key`` is the key itself (the composition root reads it from the environment
    variable the settings name); it is never logged nor put in an error."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None,
        timeout_s: float,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        root = base_url.rstrip("/")
        self._configured = bool(base_url.strip() and model.strip())
        self._poster = HttpPoster(
            root + "/chat/completions", timeout_s=timeout_s, headers=headers, retry=retry
        )
        self._probe = Probe(root + "/models", headers=headers)

    def available(self) -> bool:
        return self._configured

    async def probe(self) -> str | None:
        if not self._configured:
            return "dream.openai.base_url or dream.openai.model is not set"
        return await self._probe()

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
    ) -> ChatResult:
        payload: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            payload["tools"] = tools
            payload["tool_choice"] = "auto"
        if options is not None:
            payload |= options.wire()
        try:
            body = await self._poster.post(
                payload, timeout_s=options.timeout_s if options is not None else None
            )
        finally:
            self._probe.forget()
        source = f"{self._poster.url} (model {self.model})"
        choices = body.get("choices")
        error = body.get("error")
        if not choices and error:  # some gateways answer 200 with an error body
            detail = error.get("message") if isinstance(error, Mapping) else error
            shown = self._poster.shown(str(detail))[:300]  # scrubbed whole, then cut
            if _an_outage(error):  # a quota, a rate limit, an overload: not the request's
                raise LLMUnavailable(f"{source} answered with an error: {shown}")
            raise LLMRejected(f"{source} answered with an error: {shown}")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise LLMBadResponse(f"{source} answered without choices")
        choice = choices[0]
        message = parse_assistant_message(choice.get("message"), source)
        return ChatResult(
            message,
            Usage.from_wire(body.get("usage")),
            finish_reason_of(choice.get("finish_reason")),
        )


_OUTAGE = re.compile(r"quota|rate.?limit|overload|capacity|unavailable|server.?error|billing", re.I)


def _an_outage(error: object) -> bool:
    """Whether a 200's error body says the endpoint cannot serve now (its ``type`` or
    ``code``, as OpenAI's errors carry them): then no lesser structure is asked for, and
    no log counts as refused; the dream ends as an outage and the logs wait."""
    if not isinstance(error, Mapping):
        return False
    code = error.get("code")
    if isinstance(code, int) and not isinstance(code, bool) and (code == 429 or code >= 500):
        return True  # an HTTP status a gateway put in the body
    return any(_OUTAGE.search(str(error.get(key) or "")) for key in ("type", "code"))
