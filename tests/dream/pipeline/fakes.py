"""A scripted LLM for the pipeline: it answers each structured request from a script.

A script sees the request (messages, options) and returns the content to answer, a
``(content, finish_reason)`` pair, or raises an LLMError. :func:`extraction` and
:func:`decision` build answers; :func:`schema_of` reads the schema somnid sent.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from somnid.dream.llm.base import ChatOptions, ChatResult, Usage

Answer = str | tuple[str, str]
Script = Callable[["Request"], Answer]


@dataclass
class Request:
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    options: ChatOptions | None

    @property
    def prompt(self) -> str:
        return str(self.messages[1]["content"])

    @property
    def last(self) -> str:
        return str(self.messages[-1]["content"])

    @property
    def schema(self) -> dict[str, Any] | None:
        fmt = self.options.response_format if self.options else None
        if fmt and fmt.get("type") == "json_schema":
            schema: dict[str, Any] = fmt["json_schema"]["schema"]
            return schema
        return None

    @property
    def stage(self) -> str:
        return "decide" if "NEW:" in self.prompt else "extract"


@dataclass
class ScriptedJSON:
    script: Script
    name: str = "scripted-json"
    usage: int = 100
    requests: list[Request] = field(default_factory=list)
    reachable: bool = True
    before: Callable[[], Awaitable[object]] | None = None
    """Awaited as each request arrives, before the script answers (what happens meanwhile)."""

    def available(self) -> bool:
        return True

    async def probe(self) -> str | None:
        return None if self.reachable else "nothing listens"

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
    ) -> ChatResult:
        if self.before is not None:
            await self.before()
        request = Request([dict(m) for m in messages], tools, options)
        self.requests.append(request)
        answer = self.script(request)
        content, finish = answer if isinstance(answer, tuple) else (answer, "stop")
        return ChatResult(
            {"role": "assistant", "content": content},
            Usage(prompt_tokens=self.usage, completion_tokens=self.usage // 4),
            finish,
        )


def extraction(*memories: tuple[str, list[str], str]) -> str:
    """An extraction answer: (kind, evidence line ids, text) each; the model names line
    ``L3`` by its number, 3."""
    items = [
        {"evidence": [int(i.removeprefix("L")) for i in ids], "kind": kind, "text": text}
        for kind, ids, text in memories
    ]
    return json.dumps({"memories": items})


def decision(action: str, target: str = "none", text: str = "") -> str:
    return json.dumps({"action": action, "target": target, "text": text})


def by_stage(extract: Callable[[Request], Answer], decide: Answer | None = None) -> Script:
    def script(request: Request) -> Answer:
        if request.stage == "decide":
            assert decide is not None, f"unexpected decision request: {request.prompt}"
            return decide
        return extract(request)

    return script
