"""The scripted dreamer of the stress tests, for the shared endpoint in
:mod:`tests.llm_server` (slow answers, trickled bodies, silence, HTTP errors)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

from tests.dream.fakes import say, tool_call
from tests.llm_server import Answer

LOG_LINE = re.compile(r"^- (\d{4}-\d{2}-\d{2}_\d{3,}(?:--\d+)?)$", re.MULTILINE)
PAGE = re.compile(r"page (\d+) of (\d+)")
LOG_CALLS = ("read_session_log", "mark_log_processed")
LEAVE = re.compile(r"leave it|processed (?:already|earlier)")  # a refusal not to retry
MAX_MARKS = 3  # a mark refused this often is given up on (the dream then says so)


def dream_logs(messages: list[dict[str, Any]]) -> list[str]:
    """The logs a dream was given, from its task message (the journal excerpt after them
    holds lines such as ``- none`` that are no log)."""
    return LOG_LINE.findall(str(messages[1]["content"]))


def knowledge_name(log: str) -> str:
    """The knowledge entry the scripted dreamer makes of ``log``."""
    return f"dream-{log}".replace("_", "-")


def _history(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, result) of every call so far, in order."""
    results = {
        m.get("tool_call_id"): str(m.get("content")) for m in messages if m["role"] == "tool"
    }
    done = []
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call["function"]
            arguments = json.loads(function["arguments"] or "{}")
            done.append((function["name"], arguments, results.get(call["id"], "")))
    return done


def consolidate(messages: list[dict[str, Any]]) -> Answer:
    """A diligent dreamer: for each log in order, read every page, store one piece of
    knowledge naming it, mark it processed; then notes and a summary. It reacts to what
    the tools answered, so a re-run after a crash finishes whatever is left."""
    history = _history(messages)
    for log in dream_logs(messages):
        mine = [(n, a, r) for n, a, r in history if n in LOG_CALLS and a.get("log") == log]
        marks = [i for i, (n, _, _) in enumerate(mine) if n == "mark_log_processed"]
        if marks:
            told = mine[marks[-1]][2]
            if not told.startswith("error") or LEAVE.search(told) or len(marks) >= MAX_MARKS:
                continue  # marked, told to leave it, or given up on
        # A refused mark ("read them first": a page's text was left out of a long chat)
        # is followed as told: the log is read again from its first page.
        since = mine[marks[-1] + 1 :] if marks else mine
        reads = [(a, r) for n, a, r in since if n == "read_session_log"]
        if not reads:
            return _call(history, "read_session_log", log=log)
        last = reads[-1][1]
        if last.startswith("error"):
            continue  # gone, or never to be dreamed: leave it
        page = PAGE.search(last)
        if page and int(page[1]) < int(page[2]):
            return _call(history, "read_session_log", log=log, page=int(page[1]) + 1)
        name = knowledge_name(log)
        if not any(n == "create_knowledge" and a.get("name") == name for n, a, _ in history):
            return _call(
                history,
                "create_knowledge",
                name=name,
                entry_type="fact",
                description=f"What session log {log} said",
                body=f"Consolidated from {log}.",
            )
        return _call(history, "mark_log_processed", log=log)
    if not any(name == "write_dream_log" for name, _, _ in history):
        return _call(history, "write_dream_log", content="Consolidated every log in order.")
    return say(f"{len(dream_logs(messages))} logs consolidated.")


def _call(history: list[Any], name: str, /, **args: Any) -> dict[str, Any]:
    message = tool_call(name, **args)
    message["tool_calls"][0]["id"] = f"call-{len(history)}"  # ids unique in the chat
    return message


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout} s for {what}")
        time.sleep(0.02)
