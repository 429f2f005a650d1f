"""``dream.llm = "callback"``: somnid POSTs each chat request to a URL the user configured.

Request body ``{"messages": [...], "tools": [...], "options"?: {max_tokens, temperature,
frequency_penalty, response_format}}``; the answer is ``{"message": {role, content,
reasoning_content?, tool_calls?}, "usage": {prompt_tokens, completion_tokens,
cached_tokens?}, "finish_reason"?: "stop" | "length" | "tool_calls"}``: the same shapes
as the bridge's ``llm.chat``, over plain HTTP, for hosts that would rather serve an endpoint
than hold a websocket open.
"""

from __future__ import annotations

from typing import Any

from somnid.dream.llm.base import ChatOptions, ChatResult, LLMUnavailable, parse_chat_reply
from somnid.dream.llm.probe import Probe
from somnid.dream.llm.retry import HttpPoster, RetryPolicy

__all__ = ["CallbackBackend"]


class CallbackBackend:
    name = "callback"

    def __init__(
        self, url: str | None, *, timeout_s: float, retry: RetryPolicy | None = None
    ) -> None:
        self._poster = HttpPoster(url, timeout_s=timeout_s, retry=retry) if url else None
        self._probe = Probe(url) if url else None

    def available(self) -> bool:
        return self._poster is not None

    async def probe(self) -> str | None:
        if self._probe is None:
            return "dream.callback_url is not set"
        return await self._probe()

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
    ) -> ChatResult:
        if self._poster is None:
            raise LLMUnavailable("dream.llm = callback, but dream.callback_url is not set")
        payload: dict[str, Any] = {"messages": messages, "tools": tools}
        if options is not None and options.wire():
            payload["options"] = options.wire()
        body = await self._poster.post(
            payload, timeout_s=options.timeout_s if options is not None else None
        )
        return parse_chat_reply(body, f"the callback {self._poster.url}")
