"""A scripted LLM for dreams: deterministic tool-call sequences, honouring the ChatBackend
protocol (the only fake the dream tests use): ``chat(messages, tools, options)``,
``probe()`` and ``finish_reason``."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from somnid.dream.llm.base import ChatOptions, ChatResult, LLMUnavailable, Usage

AGENTIC: dict[str, Any] = {"mode": "agentic"}
"""``dream`` settings for the tests of the tool loop (the default mode is the pipeline)."""

Step = dict[str, Any] | Callable[[list[dict[str, Any]]], dict[str, Any]]


def call(tool: str, /, **args: Any) -> dict[str, Any]:
    """An assistant message calling one tool."""
    return calls((tool, args))


def calls(*items: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": f"c{n}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
            for n, (name, args) in enumerate(items)
        ],
    }  # fmt: skip


def tool_call(name: str, /, **args: Any) -> dict[str, Any]:
    """An assistant message calling one tool, as an LLM host would send it."""
    function = {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": f"{name}-1", "type": "function", "function": function}]}  # fmt: skip


def tea_steps(log: str) -> list[dict[str, Any]]:
    """The scripted consolidation of one log about tea: a fact, an episode, a reminder."""
    return [
        tool_call("read_session_log", log=log),
        tool_call("create_knowledge", name="tea-preference", entry_type="preference",
                  description="The user drinks green tea, no sugar", body="Green tea, no sugar."),
        tool_call("record_episode", what="Talked about tea", salience="low", source=log),
        tool_call("create_intention", what="Buy more green tea", cue="tea"),
        tool_call("mark_log_processed", log=log),
    ]  # fmt: skip


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def cut(text: str) -> dict[str, Any]:
    """A reply the server cut at its length limit (``finish_reason: length``)."""
    return {"role": "assistant", "content": text, "finish_reason": "length"}


class ScriptedLLM:
    """Answers each chat with the next step. A step ``"hang"`` waits until cancelled; a
    step ``"drop"`` fails as a lost connection would. A step's ``finish_reason`` key (see
    :func:`cut`) is the reply's, not the message's; without it a reply says ``tool_calls``
    or ``stop``. ``options`` records what each chat was asked with."""

    name = "scripted"

    def __init__(self, steps: list[Step | str], usage: int = 100) -> None:
        self.steps = list(steps)
        self.usage = usage
        self.requests: list[list[dict[str, Any]]] = []
        self.options: list[ChatOptions | None] = []
        self.cancelled = asyncio.Event()
        self.connected = True
        self._asked = asyncio.Condition()

    def available(self) -> bool:
        return self.connected

    async def probe(self) -> str | None:
        return None if self.connected else "the scripted host is not connected"

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
    ) -> ChatResult:
        self.requests.append([dict(m) for m in messages])
        self.options.append(options)
        async with self._asked:
            self._asked.notify_all()
        step = self.steps.pop(0) if self.steps else say("done")
        if step == "hang":
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled.set()
                raise
        if step == "drop":
            raise LLMUnavailable("the host went away")
        assert not isinstance(step, str)
        message = dict(step(messages) if callable(step) else step)
        finish = message.pop("finish_reason", None)
        if finish is None:
            finish = "tool_calls" if message.get("tool_calls") else "stop"
        usage = Usage(prompt_tokens=self.usage, completion_tokens=self.usage // 4)
        return ChatResult(message, usage, finish)

    async def reached(self, count: int) -> None:
        """Until the model has been asked ``count`` times."""
        async with self._asked:
            await self._asked.wait_for(lambda: len(self.requests) >= count)

    def tool_results(self) -> list[str]:
        last = self.requests[-1] if self.requests else []
        return [str(m.get("content")) for m in last if m.get("role") == "tool"]
