"""The dream's ReAct loop: ask the model, run the tools it calls, feed the results back.

Stops when the model answers without a tool call, after ``max_iterations`` rounds, or when
the token budget is spent. Cancellation is asyncio's: cancelling the dream's task aborts an
LLM call in flight and stops before the next tool. Bad tool calls (arguments that are not
JSON, unknown tools, arguments that do not fit) become error results the model can correct.
Small local models that write a tool call as JSON in their text are understood too.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from somnid.dream.llm.base import ChatBackend, ChatOptions, Usage
from somnid.dream.llm.textcalls import parse_arguments, scan_text_tool_calls

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[str]]
EventSink = Callable[[dict[str, Any]], None]

CONTEXT_BUDGET_TOKENS = 24_000
KEEP_RECENT = 6
STUB_OVER_CHARS = 200
STUB = "(older tool result left out to save space; call the tool again if you need it)"
PROCESSED_STUB = "(this log was marked processed; its text was removed to save space)"


@dataclass(slots=True)
class LoopResult:
    reason: str  # done | max_iterations | budget
    final_text: str
    iterations: int
    tool_calls: int
    usage: Usage = field(default_factory=Usage)


def estimate_tokens(text: str) -> int:
    """Rough: two per CJK character, one per four other characters."""
    cjk = sum(1 for ch in text if "\u3000" <= ch <= "\u9fff" or "\uac00" <= ch <= "\ud7af")
    return 2 * cjk + (len(text) - cjk + 3) // 4


def _message_tokens(message: dict[str, Any]) -> int:
    total = estimate_tokens(str(message.get("content") or ""))
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        total += estimate_tokens(str(function.get("name", "")) + str(function.get("arguments", "")))
    return total


def _compact(messages: list[dict[str, Any]]) -> None:
    """Replace old, long tool results with a stub until the context fits the budget; the
    pairing of tool calls and their results is never broken."""
    total = sum(_message_tokens(m) for m in messages)
    for message in messages[: max(0, len(messages) - KEEP_RECENT)]:
        if total <= CONTEXT_BUDGET_TOKENS:
            return
        content = str(message.get("content") or "")
        if (
            message.get("role") == "tool"
            and len(content) > STUB_OVER_CHARS
            and content not in (STUB, PROCESSED_STUB)
        ):
            total -= _message_tokens(message) - estimate_tokens(STUB)
            message["content"] = STUB


class ReactLoop:
    def __init__(
        self,
        backend: ChatBackend,
        tools: list[dict[str, Any]],
        call: ToolCaller,
        *,
        max_iterations: int,
        token_budget: int,
        emit: EventSink | None = None,
        options: ChatOptions | None = None,
    ) -> None:
        self.backend = backend
        self.options = options
        self.tools = tools
        self.call = call
        self.max_iterations = max_iterations
        self.token_budget = token_budget
        self.emit = emit or (lambda event: None)
        self.usage = Usage()
        self.tool_calls = 0
        self.llm_calls = 0
        self.iterations = 0
        self._log_messages: dict[str, int] = {}
        self._processed: str | None = None

    async def run(self, messages: list[dict[str, Any]]) -> LoopResult:
        for iteration in range(1, self.max_iterations + 1):
            self.iterations = iteration - 1
            if self.usage.total >= self.token_budget:
                return self._result(
                    "budget", "(token budget spent; the dream ends here)", iteration - 1
                )
            reply = await self.backend.chat(messages, self.tools, self.options)
            self.llm_calls += 1
            self.iterations = iteration
            self.usage = self.usage + reply.usage
            message = dict(reply.message)
            message.setdefault("role", "assistant")
            calls = list(message.get("tool_calls") or [])
            if not calls:
                found = scan_text_tool_calls(message, self.tools)
                calls = list(found.calls)
                if calls:
                    message["tool_calls"] = calls
                elif found.problems:
                    # It meant to call a tool but got it wrong: say why instead of ending.
                    messages.append(message)
                    messages.append({"role": "user", "content": _fix_call(found.problems)})
                    continue
            if not calls:
                return self._result("done", str(message.get("content") or ""), iteration)
            messages.append(message)
            for call in calls:
                messages.append(await self._run_call(call, len(messages)))
            self._after_round(messages)
        return self._result(
            "max_iterations",
            "(the iteration cap was reached; the dream ends here)",
            self.max_iterations,
        )

    async def _run_call(self, call: dict[str, Any], position: int) -> dict[str, Any]:
        function = call.get("function") or {}
        name = str(function.get("name") or "")
        call_id = str(call.get("id") or f"call-{self.tool_calls}")
        args, error = parse_arguments(function.get("arguments") or "{}")
        if args is None:
            result = f"error: the arguments of {name} are not valid JSON ({error}); send them again"
        else:
            result = await self.call(name, args)
        self.tool_calls += 1
        ok = not result.startswith("error:")
        self.emit({"type": "tool", "name": name, "ok": ok, "args": _short(args)})
        if ok and name == "read_session_log" and args:
            self._log_messages[str(args.get("log", ""))] = position
        if ok and name == "mark_log_processed" and args:
            self._processed = str(args.get("log", ""))
        return {"role": "tool", "tool_call_id": call_id, "content": result}

    def _after_round(self, messages: list[dict[str, Any]]) -> None:
        processed = self._processed
        if processed is not None:
            index = self._log_messages.pop(processed, None)
            if index is not None and index < len(messages):
                messages[index]["content"] = PROCESSED_STUB
            self._processed = None
        _compact(messages)

    def _result(self, reason: str, text: str, iterations: int) -> LoopResult:
        return LoopResult(reason, text, iterations, self.tool_calls, self.usage)


def _fix_call(problems: list[str] | tuple[str, ...]) -> str:
    reasons = "; ".join(problems)
    return (
        f"error: your message looks like a tool call, but it could not be run ({reasons}). "
        "Call the tool again with valid arguments."
    )


def _short(args: dict[str, Any] | None) -> str:
    if not args:
        return ""
    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) <= 200 else text[:200] + "…"
