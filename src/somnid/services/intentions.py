"""Intentions as the agent and the API use them: add, complete, cancel, list, agenda."""

from __future__ import annotations

from typing import Any

from somnid.errors import InvalidInput
from somnid.memory.clock import Clock
from somnid.memory.intentions import Agenda, Intention, agenda, intention_of
from somnid.memory.kinds import Kind, check_priority
from somnid.memory.scope import in_scope
from somnid.services.memories import MemoryService

MAX_WHAT = 2000


class Intentions:
    def __init__(self, memories: MemoryService, clock: Clock) -> None:
        self.memories = memories
        self.clock = clock

    async def add(
        self,
        what: str,
        *,
        due: str | None = None,
        cue: str | None = None,
        priority: str = "mid",
        source: str | None = None,
        project: str | None = None,
    ) -> Intention:
        what = what.strip()
        if not what:
            raise InvalidInput("an intention needs a description of what to do")
        if len(what) > MAX_WHAT:
            raise InvalidInput(f"an intention's description is longer than {MAX_WHAT} characters")
        fields: dict[str, Any] = {"priority": check_priority(priority)}
        if due:
            fields["due"] = due
        if cue is not None:  # checked with every intention's fields (memories.checked_fields)
            fields["cue"] = cue
        if source is not None:
            fields["source"] = source
        if project:
            fields["project"] = project
        entry = await self.memories.create(Kind.INTENTION, None, description=what, fields=fields)
        return intention_of(entry, self.clock.tz)

    async def complete(self, intention_id: str) -> Intention:
        return await self._close(intention_id, "completed")

    async def cancel(self, intention_id: str) -> Intention:
        return await self._close(intention_id, "cancelled")

    async def _close(self, intention_id: str, reason: str) -> Intention:
        entry = await self.memories.archive(Kind.INTENTION, intention_id.strip(), reason=reason)
        return intention_of(entry, self.clock.tz)

    async def open(self, project: str | None = None) -> list[Intention]:
        """Open intentions (of ``project`` or of no project), by due date then id."""
        entries = await self.memories.scan((Kind.INTENTION,))
        result = []
        for entry in entries:
            if not in_scope(entry.field("project"), project):
                continue
            intention = intention_of(entry, self.clock.tz)
            if intention.status == "open":
                result.append(intention)
        result.sort(key=lambda i: (i.due is None, i.due or self.clock.now().date(), i.id))
        return result

    async def agenda(self, message: str | None = None, project: str | None = None) -> Agenda:
        return agenda(await self.open(project), self.clock.now().date(), message)
