"""The dream's tools: everything the consolidating model may do to memory, and nothing more.

Each tool is an ``async def`` whose signature and docstring are its schema (see
:mod:`somnid.tools.spec`); it answers a short text for the model. A refusal the model can
act on is an answer starting with ``error:``, never an exception; only a fault of somnid
itself (a full disk, a bug) raises. Logs and entries are named, never given as paths, so no
argument reaches a file outside the data dir. Every write goes through
:class:`MemoryService`, which serialises writes and keeps the index current, and is
recorded in the dream's :class:`Ledger`, from which the journal is written.

The tools live in two groups: :mod:`somnid.dream.log_tools` (logs, journals, notes, decay)
and :mod:`somnid.dream.entry_tools` (memories and profiles).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

from somnid.dream import profile_gate
from somnid.dream.edits import MemoryEdits
from somnid.dream.entry_tools import EntryTools
from somnid.dream.ledger import ItemRef, Ledger
from somnid.dream.llm.textcalls import describe_closest
from somnid.dream.log_tools import LogTools
from somnid.dream.similarity import restates
from somnid.errors import InvalidArguments, InvalidInput
from somnid.memory.clock import Clock
from somnid.memory.intentions import Intention
from somnid.memory.kinds import Kind
from somnid.recall.system import RecallSystem
from somnid.services.intentions import Intentions
from somnid.services.maintenance import Maintenance
from somnid.services.memories import MemoryService
from somnid.services.recall_service import RecallService
from somnid.sessions.service import SessionService
from somnid.store.layout import Layout
from somnid.tools.spec import ToolSpec, tool_spec

TOOL_NAMES = (
    "read_session_log",
    "list_items",
    "read_item",
    "find_similar",
    "create_knowledge",
    "update_knowledge",
    "create_skill",
    "update_skill",
    "archive_item",
    "record_episode",
    "update_about_user",
    "update_about_me",
    "mark_log_processed",
    "review_dream_history",
    "decay_all_knowledge",
    "write_dream_log",
    "create_intention",
)
READ_ONLY = frozenset(
    {"read_session_log", "list_items", "read_item", "find_similar", "review_dream_history"}
)


class DreamTools(LogTools, EntryTools):
    """The dreamer's tools. One instance serves every dream; :meth:`bind` gives it the
    ledger of the dream at hand."""

    def __init__(
        self,
        memories: MemoryService,
        recall: RecallSystem,
        sessions: SessionService,
        maintenance: Maintenance,
        layout: Layout,
        clock: Clock,
        lang: str = "en",
        *,
        ledger: Ledger | None = None,
        log_tokens: int = 6000,
        history_tokens: int = 3000,
        item_tokens: int = 4000,
        intentions: Intentions | None = None,
        recaller: RecallService | None = None,
    ) -> None:
        """``log_tokens``: one page of a session log; ``history_tokens``: all journals
        shown by review_dream_history; ``item_tokens``: one entry shown by read_item."""
        self.memories = memories
        self.recall = recall
        self.recaller = recaller or RecallService(recall)
        self.sessions = sessions
        self.maintenance = maintenance
        self.layout = layout
        self.clock = clock
        self.lang = lang
        self.ledger = ledger if ledger is not None else Ledger()
        self.intentions = intentions or Intentions(memories, clock)
        gate = profile_gate.for_dreams(sessions, layout, clock.tz, lambda: self.ledger)
        self.edits = MemoryEdits(memories, clock, gate)
        self.log_tokens = log_tokens
        self.history_tokens = history_tokens
        self.item_tokens = item_tokens
        self._marking = asyncio.Lock()
        self._decaying = asyncio.Lock()
        self._specs: dict[str, ToolSpec] = {
            name: tool_spec(getattr(self, name), concurrent=name in READ_ONLY, clamp=True)
            for name in TOOL_NAMES
        }

    async def create_intention(
        self, what: str, due: str = "", cue: str = "", priority: str = "mid", source: str = ""
    ) -> str:
        """Record something the agent should do or raise later, when the user asked for it
        in a log and the agent did not record it then (check list_items with kind
        intention first, so it is not recorded twice).

        Args:
            what: What to do, as one clear sentence.
            due: Due date, YYYY-MM-DD. Empty: no fixed date.
            cue: Comma-separated keywords that should bring it to mind.
            priority: low, mid or high.
            source: The log it came from.
        """
        same = await self.open_intention_like(what)
        if same is not None:  # small models repeat a call that worked: one intention
            return (
                f"error: open intention {same.id} already says this ({same.what[:120]}); "
                "nothing was created"
            )
        try:
            intention = await self.intentions.add(
                what, due=due or None, cue=cue or None, priority=priority, source=source or None
            )
        except InvalidInput as exc:
            return f"error: {exc.detail}"
        self.ledger.add_created(ItemRef(Kind.INTENTION, intention.id, intention.path))
        when = intention.due.isoformat() if intention.due else "no fixed date"
        return f"created intention {intention.id}: {intention.what} ({when}, {intention.priority})"

    async def open_intention_like(self, what: str) -> Intention | None:
        """The open intention that already says ``what`` (the same content words, mostly),
        if any: what a dream, by tool or by pipeline, never records twice."""
        return next(
            (i for i in await self.intentions.open() if restates(what, i.what)),
            None,
        )

    def bind(self, ledger: Ledger) -> None:
        """Record into ``ledger`` from now on (one ledger per dream)."""
        self.ledger = ledger

    def specs(self) -> list[dict[str, Any]]:
        """The OpenAI ``tools`` array: ``{"type": "function", "function": {...}}`` each."""
        return [
            {"type": "function", "function": copy.deepcopy(self._specs[name].schema())}
            for name in TOOL_NAMES
        ]

    def spec(self, name: str) -> ToolSpec | None:
        return self._specs.get(name)

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run a tool by name with a model's arguments, validated against its schema. An
        unknown tool or arguments that do not fit are answered with ``error: …``."""
        spec = self._specs.get(name)
        if spec is None:
            closest = describe_closest(name, self.specs())
            return (
                f"error: unknown tool {name[:80]!r}; {closest}. "
                f"The tools are: {', '.join(TOOL_NAMES)}"
            )
        if not isinstance(arguments, dict):
            return f"error: the arguments of {name} must be a JSON object"
        try:
            args = spec.validate(arguments)
        except InvalidArguments as exc:
            issues = exc.extra.get("errors", [])
            detail = "; ".join(f"{issue['field']}: {issue['message']}" for issue in issues)
            return f"error: invalid arguments for {name}: {detail or exc.detail}"
        method: Callable[..., Awaitable[str]] = getattr(self, name)
        return await method(**args)
