"""``dream.mode = "agentic"``: the model steers. It gets the dream tools and the list of
pending logs, and the ReAct loop runs the tools it calls until it is done, the iteration
cap or the token budget. Meant for strong models; small local ones do better with the
pipeline (:mod:`somnid.dream.pipeline`).

A loop the model could not carry on (``llm_stuck``, ``llm_truncated``,
``llm_unrecognised``: see :mod:`somnid.dream.loop`) makes the dream ``interrupted`` with
that reason, whatever it processed before; the logs it did not mark wait for the next one.
The model sees a short summary of the last journal (:func:`journal_summary`), never the
journal itself.
"""

from __future__ import annotations

from somnid.config import DreamSettings
from somnid.dream.journal import latest_journal
from somnid.dream.ledger import Ledger
from somnid.dream.llm.base import ChatBackend, ChatOptions
from somnid.dream.loop import FAILED_STOPS, EventSink, LoopResult, ReactLoop
from somnid.dream.prompts import journal_summary, system_prompt, task_message
from somnid.dream.result import DreamResult
from somnid.dream.tools import READ_ONLY, DreamTools
from somnid.memory.clock import Clock
from somnid.store.layout import Layout


class AgenticDream:
    def __init__(
        self,
        settings: DreamSettings,
        lang: str,
        clock: Clock,
        layout: Layout,
        tools: DreamTools,
        backend: ChatBackend,
        emit: EventSink,
    ) -> None:
        self.settings = settings
        self.lang = lang
        self.clock = clock
        self.layout = layout
        self.tools = tools
        self.backend = backend
        self.emit = emit

    def options(self) -> ChatOptions:
        return ChatOptions(
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            frequency_penalty=self.settings.frequency_penalty,
        )

    async def run(self, result: DreamResult, ledger: Ledger) -> None:
        """Consolidate ``result.logs``; what the tools did lands in ``ledger``, the counts
        in ``result`` (also when interrupted)."""
        self.tools.bind(ledger)
        messages = [
            {"role": "system", "content": system_prompt(self.lang)},
            {
                "role": "user",
                "content": task_message(
                    result.logs,
                    result.trigger,
                    self.clock.now(),
                    journal_summary(latest_journal(self.layout), self.lang),
                    self.lang,
                ),
            },
        ]
        loop = ReactLoop(
            self.backend,
            self.tools.specs(),
            self.tools.call,
            max_iterations=self.settings.max_iterations,
            token_budget=self.settings.token_budget,
            emit=self.emit,
            options=self.options(),
            unfinished=lambda: ledger.unfinished(result.logs),
            read_only=READ_ONLY,
        )
        outcome: LoopResult | None = None
        try:
            outcome = await loop.run(messages)
        finally:
            usage = loop.usage
            result.tokens = {
                "prompt": usage.prompt_tokens,
                "completion": usage.completion_tokens,
                "cached": usage.cached_tokens,
                "total": usage.total,
            }
            result.llm_calls = loop.llm_calls
            result.tool_calls = loop.tool_calls
            result.iterations = loop.iterations
        result.summary = outcome.final_text
        if outcome.reason in FAILED_STOPS:
            result.status, result.reason = "interrupted", loop.detail or outcome.reason
        else:
            result.status, result.reason = "deep_sleep", outcome.reason
