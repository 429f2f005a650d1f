"""One structured answer from the model: ask, validate, repair once.

Structured output is asked for as strongly as the server allows: a ``json_schema``
``response_format`` first, ``json_object`` if the server refuses that, plain text with the
schema in the prompt if it refuses both (the level found is kept for the rest of the dream).
An answer cut by the length cap, or one that does not fit the schema, is sent back once
with what is wrong; a second failure gives up on the stage (the caller leaves its log
pending). Failures are counted and published as events.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import Any, TypeVar

from somnid.config import DreamSettings
from somnid.dream.llm.base import ChatBackend, ChatOptions, LLMRejected, LLMTimeout
from somnid.dream.loop import EventSink
from somnid.dream.pipeline import prompts
from somnid.dream.pipeline.schemas import AnswerError, parse_json
from somnid.dream.result import DreamResult
from somnid.recall.assoc import estimate_tokens

T = TypeVar("T")


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The estimated tokens of a request's messages."""
    return sum(estimate_tokens(str(m.get("content") or "")) for m in messages)


LEVELS = ("json_schema", "json_object", "text")
CUT = "the answer was cut off at the length limit; give a shorter answer (fewer or shorter items)"


class Asker:
    def __init__(
        self,
        backend: ChatBackend,
        settings: DreamSettings,
        lang: str,
        result: DreamResult,
        emit: EventSink,
    ) -> None:
        self.backend = backend
        self.settings = settings
        self.lang = lang
        self.result = result
        self.emit = emit
        self.level = 0

    def timeout_for(self, messages: list[dict[str, Any]]) -> float:
        """The request's timeout: scaled with its tokens (see
        ``dream.request_timeout_per_1k_tokens_s``), never below ``request_timeout_s``."""
        tokens = prompt_tokens(messages) + self.settings.max_tokens
        scaled = self.settings.request_timeout_per_1k_tokens_s * tokens / 1000
        return max(self.settings.request_timeout_s, scaled)

    def _options(self, name: str, schema: dict[str, Any]) -> ChatOptions:
        level = LEVELS[self.level]
        response_format: dict[str, Any] | None = None
        if level == "json_schema":
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": True, "schema": schema},
            }
        elif level == "json_object":
            response_format = {"type": "json_object"}
        return ChatOptions(
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            frequency_penalty=self.settings.frequency_penalty,
            response_format=response_format,
        )

    async def ask(
        self,
        stage: str,
        prompt: str,
        schema: dict[str, Any],
        read: Callable[[Any], T],
        *,
        system: str | None = None,
    ) -> T | None:
        """The model's answer to ``prompt`` read by ``read`` (which raises AnswerError),
        or None once the answer failed twice. LLM failures (unreachable, timeout, a refusal
        at the last level) raise LLMError."""
        schema_text = json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system or prompts.system(self.lang)},
            {"role": "user", "content": prompt},
        ]
        attempts = 0
        while attempts < 2:
            if LEVELS[self.level] != "json_schema" and attempts == 0:
                messages[1]["content"] = prompt + prompts.schema_note(self.lang, schema_text)
            options = dataclasses.replace(
                self._options(stage, schema), timeout_s=self.timeout_for(messages)
            )
            try:
                reply = await self.backend.chat(messages, [], options)
            except LLMTimeout:
                # Abandoned (its connection closed): what it cost is counted all the same.
                self.result.add_abandoned(prompt_tokens(messages))
                raise
            except LLMRejected:
                if self.level + 1 >= len(LEVELS):
                    raise
                self.level += 1  # the server refused the structured request: ask less of it
                continue
            attempts += 1
            self.result.add_usage(reply.usage)
            content = str(reply.message.get("content") or "")
            try:
                if reply.truncated:
                    raise AnswerError(CUT)
                return read(parse_json(content))
            except AnswerError as exc:
                problem = str(exc)
            self.emit({"type": "rejected", "stage": stage, "attempt": attempts, "why": problem})
            fix = prompts.repair(self.lang, problem=problem, schema=schema_text)
            messages += [
                {"role": "assistant", "content": content[:4000]},
                {"role": "user", "content": fix},
            ]
        self.result.failed_stages += 1
        return None
