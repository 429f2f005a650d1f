"""What every dream tool shares: the services it works with, the dream's ledger, and the
rule that a refusal is an answer (``error: …``) rather than an exception."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec

from somnid.dream.edits import MemoryEdits
from somnid.dream.ledger import ItemRef, Ledger
from somnid.errors import BrokenFile, Conflict, InvalidInput, NotFound, PreconditionFailed
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.recall.system import RecallSystem
from somnid.services.maintenance import Maintenance
from somnid.services.memories import MemoryService
from somnid.services.recall_service import RecallService
from somnid.sessions.service import SessionService
from somnid.store.layout import Layout

P = ParamSpec("P")


def answers_errors(fn: Callable[P, Awaitable[str]]) -> Callable[P, Awaitable[str]]:
    """Refusals a model can act on become its answer (``error: …``); faults (a full disk,
    a bug) propagate."""

    @functools.wraps(fn)
    async def tool(*args: P.args, **kwargs: P.kwargs) -> str:
        try:
            return await fn(*args, **kwargs)
        except BrokenFile as exc:
            return f"error: {exc.detail} (a person has to repair this file; leave it alone)"
        except (InvalidInput, NotFound, Conflict, PreconditionFailed) as exc:
            return f"error: {exc.detail}"

    return tool


class ToolBase:
    """The state the tool groups share; :class:`somnid.dream.tools.DreamTools` sets it."""

    memories: MemoryService
    recall: RecallSystem
    recaller: RecallService
    sessions: SessionService
    maintenance: Maintenance
    layout: Layout
    clock: Clock
    lang: str
    ledger: Ledger
    edits: MemoryEdits
    log_tokens: int
    history_tokens: int
    item_tokens: int
    _marking: asyncio.Lock
    _decaying: asyncio.Lock

    def _ref(self, entry: Entry) -> ItemRef:
        return ItemRef(entry.kind, entry.name, str(entry.path))
