"""The dream's ReAct loop: ask the model, run the tools it calls, feed the results back.

Stops when the model answers without a tool call (and no log is left unprocessed), after
``max_iterations`` rounds, or when the token budget is spent. Cancellation is asyncio's:
cancelling the dream's task aborts an LLM call in flight and stops before the next tool.
Bad tool calls (arguments that are not JSON, unknown tools, arguments that do not fit)
become error results the model can correct; small local models that write a tool call
in their text are understood too (:mod:`somnid.dream.llm.textcalls`).

What a small model gets wrong stops the loop instead of spinning it (issue 12):

- the same failing call (same tool, same arguments) ``stuck_after`` times with no progress
  in between (only read-only calls, or other failures): ``llm_stuck``;
- a reply cut by the token limit, or a reply with no call while logs are unprocessed, is
  answered with an error once; a second such reply in a row ends the loop
  (``llm_truncated``, ``llm_unrecognised``);
- ``mark_log_processed`` for a log whose text has not reached the model (read in the same
  reply, or its text stubbed out before the model saw it) is refused: a log is never
  archived unseen.

Every refused call and unusable reply is published (``emit``), as is every tool call.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from somnid.dream.llm.base import ChatBackend, ChatOptions, ChatResult, Usage
from somnid.dream.llm.textcalls import TextCalls, parse_arguments, scan_text_tool_calls

ToolCaller = Callable[[str, dict[str, Any]], Awaitable[str]]
EventSink = Callable[[dict[str, Any]], None]
Unfinished = Callable[[], list[str]]

CONTEXT_BUDGET_TOKENS = 24_000
KEEP_RECENT = 6
STUB_OVER_CHARS = 200
STUCK_AFTER = 3
MAX_CALLS_PER_REPLY = 24
"""Tool calls run from one reply; the rest are refused (the model is told to send them
again). A tool call is a write a revert must undo: one reply is no bulk import."""
STUB = "(older tool result left out to save space; call the tool again if you need it)"
PROCESSED_STUB = "(this log was marked processed; its text was removed to save space)"
READ_TOOL = "read_session_log"
MARK_TOOL = "mark_log_processed"

FAILED_STOPS = frozenset({"llm_stuck", "llm_truncated", "llm_unrecognised"})
"""Why a loop ended when the model could not go on: the dream is interrupted, whatever it
processed before. (The other reasons: done, max_iterations, budget.)"""


@dataclass(slots=True)
class LoopResult:
    reason: str  # done, max_iterations, budget or one of FAILED_STOPS
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


def _compact(messages: list[dict[str, Any]], budget: int) -> None:
    """Replace old, long tool results with a stub until the context fits the budget; the
    pairing of tool calls and their results is never broken."""
    total = sum(_message_tokens(m) for m in messages)
    for message in messages[: max(0, len(messages) - KEEP_RECENT)]:
        if total <= budget:
            return
        content = str(message.get("content") or "")
        if (
            message.get("role") == "tool"
            and len(content) > STUB_OVER_CHARS
            and content not in (STUB, PROCESSED_STUB)
        ):
            total -= _message_tokens(message) - estimate_tokens(STUB)
            message["content"] = STUB


def _log_of(args: dict[str, Any] | None) -> str:
    """The log a read or mark names, as the tools read it (``.md`` tolerated)."""
    raw = str((args or {}).get("log", "")).strip()
    return raw.removesuffix(".md")


def _page_of(args: dict[str, Any] | None) -> int:
    page = (args or {}).get("page", 1)
    return page if isinstance(page, int) and not isinstance(page, bool) else 1


@dataclass(slots=True)
class _Reads:
    """Which pages of which logs the model has seen: a read's text counts once the next
    request carried it intact (not stubbed)."""

    in_flight: list[tuple[str, int, int]] = field(default_factory=list)
    """(log, page, message index) read in the last round, not yet sent to the model."""
    unseen: set[tuple[str, int]] = field(default_factory=set)
    """Pages whose latest read was stubbed before the model saw it."""
    positions: dict[str, list[int]] = field(default_factory=dict)
    """Where each log's read results are, to stub them once it is marked processed."""

    def deliver(self, messages: list[dict[str, Any]]) -> None:
        for log, page, index in self.in_flight:
            content = messages[index].get("content") if index < len(messages) else None
            if content in (STUB, PROCESSED_STUB):
                self.unseen.add((log, page))
            else:
                self.unseen.discard((log, page))
        self.in_flight.clear()

    def unseen_pages(self, log: str) -> list[int]:
        return sorted(page for name, page in self.unseen if name == log)


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
        unfinished: Unfinished | None = None,
        context_budget: int = CONTEXT_BUDGET_TOKENS,
        stuck_after: int = STUCK_AFTER,
        read_only: frozenset[str] = frozenset(),
    ) -> None:
        """``unfinished`` names the logs still to be processed: a reply without a call
        while it names any is no "done". ``stuck_after``: identical failing calls that
        end the loop when nothing but the ``read_only`` tools succeeded in between."""
        self.backend = backend
        self.options = options
        self.tools = tools
        self.call = call
        self.max_iterations = max_iterations
        self.token_budget = token_budget
        self.context_budget = context_budget
        self.stuck_after = max(1, stuck_after)
        self.read_only = read_only
        self.emit = emit or (lambda event: None)
        self.unfinished = unfinished or (lambda: [])
        self.usage = Usage()
        self.tool_calls = 0
        self.llm_calls = 0
        self.iterations = 0
        self.detail = ""
        """Why the loop stopped early, for the dream's reason (``llm_*`` stops)."""
        self._reads = _Reads()
        self._processed: list[str] = []
        self._failures: dict[str, int] = {}
        self._stuck = False
        self._warned = False  # the last reply was unusable and the model was told

    async def run(self, messages: list[dict[str, Any]]) -> LoopResult:
        for iteration in range(1, self.max_iterations + 1):
            if self.usage.total >= self.token_budget:
                return self._result("budget", "(token budget spent; the dream ends here)")
            self.iterations = iteration
            self._reads.deliver(messages)
            reply = await self.backend.chat(messages, self.tools, self.options)
            self.llm_calls += 1
            self.usage = self.usage + reply.usage
            message = dict(reply.message)
            message.setdefault("role", "assistant")
            calls = list(message.get("tool_calls") or [])
            found = TextCalls()
            if not calls:
                found = scan_text_tool_calls(message, self.tools)
                calls = list(found.calls)
                if calls:
                    message["tool_calls"] = calls
            if not calls:
                stop = self._no_call(messages, message, reply, found)
                if stop is not None:
                    return stop
                continue
            self._warned = False
            left_out = len(calls) - MAX_CALLS_PER_REPLY
            if left_out > 0:  # a reply of 3,000 creates ran them all, past every budget
                calls = message["tool_calls"] = calls[:MAX_CALLS_PER_REPLY]
            messages.append(message)
            read_now = {_log_of(_args(c)) for c in calls if _name(c) == READ_TOOL}
            for call in calls:
                result = await self._run_call(call, len(messages), read_now)
                messages.append(result)
                if self._stuck:
                    return self._result("llm_stuck", self.detail)
            if left_out > 0:
                self._reject("too_many_calls", _too_many(left_out))
                messages.append({"role": "user", "content": _too_many(left_out)})
            self._after_round(messages)
        return self._result(
            "max_iterations", "(the iteration cap was reached; the dream ends here)"
        )

    def _no_call(
        self,
        messages: list[dict[str, Any]],
        message: dict[str, Any],
        reply: ChatResult,
        found: TextCalls,
    ) -> LoopResult | None:
        """A reply without a call to run: done, a mistake to point out, or the end."""
        text = str(message.get("content") or "")
        if found.problems:
            # It meant to call a tool but got it wrong: say why, and count the repeat.
            answer = _fix_call(found.problems)
            self._reject("bad_text_call", answer, signature="text:" + "; ".join(found.problems))
            messages += [message, {"role": "user", "content": answer}]
            if self._stuck:
                return self._result("llm_stuck", self.detail)
            return None
        left = self.unfinished()
        if reply.truncated:
            reason, why = "llm_truncated", "cut by the length limit"
            answer = (
                "error: your reply was cut off by the length limit before it was complete, "
                "so nothing in it was run. Reply with one short tool call at a time."
            )
        elif left:
            reason, why = "llm_unrecognised", "without a tool call while logs were unprocessed"
            answer = (
                "error: your reply holds no tool call that can be run, but these logs are not "
                f"processed yet: {', '.join(left[:10])}. Call one tool now, as a tool call "
                '(for example {"name": "<tool name>", "arguments": {...}}).'
            )
        else:
            return self._result("done", text)
        self._reject(reason, answer)
        if self._warned:
            self.detail = f"{reason}: the model's reply was {why} again, after being told"
            return self._result(reason, self.detail)
        self._warned = True
        messages += [message, {"role": "user", "content": answer}]
        return None

    async def _run_call(
        self, call: dict[str, Any], position: int, read_now: set[str]
    ) -> dict[str, Any]:
        name = _name(call)
        call_id = str(call.get("id") or f"call-{self.tool_calls}")
        args, error = parse_arguments((call.get("function") or {}).get("arguments") or "{}")
        if args is None:
            result = f"error: the arguments of {name} are not valid JSON ({error}); send them again"
        else:
            result = self._mark_refusal(name, args, read_now) or await self.call(name, args)
        self.tool_calls += 1
        ok = not result.startswith("error:")
        event: dict[str, Any] = {"type": "tool", "name": name, "ok": ok, "args": _short(args)}
        if ok:
            if name not in self.read_only:
                self._failures.clear()  # progress: earlier failures may be fixed now
            if name == READ_TOOL:
                log = _log_of(args)
                self._reads.in_flight.append((log, _page_of(args), position))
                self._reads.positions.setdefault(log, []).append(position)
            elif name == MARK_TOOL:
                self._processed.append(_log_of(args))
        else:
            event["error"] = result[:300]
            raw = (call.get("function") or {}).get("arguments")
            shown = json.dumps(args, sort_keys=True) if args is not None else str(raw)
            self._count_failure(f"{name}:{shown}", f"{name} {_short(args)}: {result[:200]}")
        self.emit(event)
        return {"role": "tool", "tool_call_id": call_id, "content": result}

    def _mark_refusal(self, name: str, args: dict[str, Any], read_now: set[str]) -> str | None:
        """Why a mark may not run yet: the model has not seen the log's text."""
        if name != MARK_TOOL:
            return None
        log = _log_of(args)
        if log in read_now:
            return (
                f"error: log {log} is read in this same reply, so you have not seen its text "
                "yet. Store what is worth keeping from it first; call "
                f'mark_log_processed(log="{log}") in a later reply.'
            )
        unseen = self._reads.unseen_pages(log)
        if unseen:
            pages = ", ".join(str(page) for page in unseen)
            return (
                f"error: the text of page(s) {pages} of log {log} was left out before you saw "
                "it; read it again with read_session_log, then mark the log in a later reply."
            )
        return None

    def _count_failure(self, signature: str, detail: str) -> None:
        count = self._failures[signature] = self._failures.get(signature, 0) + 1
        if count >= self.stuck_after:
            self._stuck = True
            self.detail = f"llm_stuck: the same failing call {count} times: {detail}"

    def _reject(self, reason: str, answer: str, *, signature: str | None = None) -> None:
        self.emit({"type": "rejected", "reason": reason, "error": answer[:300]})
        if signature is not None:
            self._count_failure(signature, answer[:200])

    def _after_round(self, messages: list[dict[str, Any]]) -> None:
        for log in self._processed:
            for index in self._reads.positions.pop(log, []):
                if index < len(messages):
                    messages[index]["content"] = PROCESSED_STUB
        self._processed.clear()
        _compact(messages, self.context_budget)

    def _result(self, reason: str, text: str) -> LoopResult:
        return LoopResult(reason, text, self.iterations, self.tool_calls, self.usage)


def _name(call: dict[str, Any]) -> str:
    return str((call.get("function") or {}).get("name") or "")


def _args(call: dict[str, Any]) -> dict[str, Any] | None:
    return parse_arguments((call.get("function") or {}).get("arguments") or "{}")[0]


def _too_many(left_out: int) -> str:
    return (
        f"error: only the first {MAX_CALLS_PER_REPLY} tool calls of a reply are run; the "
        f"other {left_out} were not. Send the ones still needed in your next replies."
    )


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
