"""The one door to recall: search, then the entries behind the hits, then quoted text.

The route, the agent's memory tools and the dream tools all come through here, so each gets
the same hits, the same loading (an entry that vanished or broke since indexing is left out)
and the mode the search itself ran in, not one worked out beside it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from somnid.memory.kinds import Kind
from somnid.recall.assoc import Decision
from somnid.recall.dates import TimeQuery
from somnid.recall.engine import Hit
from somnid.recall.system import RecallSystem
from somnid.recall.vectors import Vector
from somnid.services.archive_recall import (
    ArchiveLine,
    ArchiveSource,
    ArchiveText,
    archive_markdown,
    rank_lines,
)
from somnid.services.recalling import Found, hint_of, load_hits, quote_markdown
from somnid.sessions.transcript import Turn

Select = Callable[[list[Hit]], list[Hit]]
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Recalled:
    query: str
    mode: Literal["hybrid", "keyword"]
    time: str | None  # the dates the search read from the query (explain shows them)
    found: list[Found]
    lines: list[ArchiveLine] = field(default_factory=list)  # archived lines, after ``found``

    @property
    def markdown(self) -> str:
        """The results for a model: quoted data with their sources, never instructions;
        archived conversation lines after the memories."""
        return quote_markdown(self.found, self.query) + "\n".join(archive_markdown(self.lines))


class RecallService:
    def __init__(self, system: RecallSystem, archive: ArchiveSource | None = None) -> None:
        """``archive`` gives the archived conversation lines (the session service owns
        them); without it, or with ``recall.archive`` off, only memories are searched."""
        self._system = system
        self.archive = archive if system.settings.recall.archive else None
        self._archive_text: ArchiveText | None = None  # of the last archive read
        self._archive_lock = threading.Lock()  # recalls at once build it once
        self._warming: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Read the archive in the background, so that the first recall after a start does
        not (a year of logs: seconds)."""
        if self.archive is not None:
            self._warming = asyncio.create_task(self._warm(), name="somnid-archive-read")

    async def stop(self) -> None:
        if self._warming is not None:
            self._warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._warming
            self._warming = None

    async def _warm(self) -> None:
        assert self.archive is not None
        try:
            turns = await self.archive()
            await asyncio.to_thread(self._text_of, turns)
        except Exception as exc:  # the first recall reads it then, and says what fails
            log.warning("could not read the conversation archive ahead: %s", exc)

    async def archive_read(self) -> None:
        """Wait for the start's read of the archive (a recall need not: it reads what is
        not read yet itself)."""
        if self._warming is not None:
            await asyncio.shield(self._warming)

    async def find(
        self,
        query: str,
        *,
        kinds: tuple[Kind, ...] | None = None,
        limit: int = 10,
        project: str | None = None,
        select: Select | None = None,
        lines: int = 0,
    ) -> Recalled:
        """Search, let ``select`` pick among the hits (e.g. leave out what a session has
        seen), and load the entries of what is left; with ``lines`` and an archive, up to
        that many archived conversation lines too, ranked after the memories (only when
        the search takes episodes: a line is what an episode is made of; a search of
        knowledge, skills or intentions alone wants none)."""
        if kinds is not None and Kind.EPISODE not in kinds:
            lines = 0
        system = self._system
        outcome = await system.run(query, kinds=kinds, limit=limit, project=project)
        hits = select(outcome.hits) if select is not None else outcome.hits
        found = await asyncio.to_thread(load_hits, system.read_entry, hits)
        archived: list[ArchiveLine] = []
        if self.archive is not None and lines > 0:
            turns = await self.archive()
            archived = await asyncio.to_thread(self._rank_lines, query, outcome.when, turns, lines)
        return Recalled(query, outcome.mode, outcome.time, found, archived)

    def _rank_lines(
        self, query: str, when: TimeQuery, turns: list[Turn], limit: int
    ) -> list[ArchiveLine]:
        """Rank in a worker thread, with the time the search read from the query (none
        with ``recall.time_boost`` 0); the joined text is built again only when the session
        service hands over another list (it reads the archive again when a file changed)."""
        text = self._text_of(turns)
        return rank_lines(query, text, limit, when, self._system.settings.recall.time_bound)

    def _text_of(self, turns: list[Turn]) -> ArchiveText:
        text = self._archive_text
        if text is None or text.turns is not turns:
            with self._archive_lock:
                text = self._archive_text
                if text is None or text.turns is not turns:
                    made = ArchiveText(turns, self._system.clock.tz, before=text)
                    text = self._archive_text = made
        return text

    async def meanings(self, texts: list[str]) -> list[Vector] | None:
        """The texts' vectors (unit length; their dot product is how close two texts are
        in meaning), or None while the embedding model is not ready."""
        return await self._system.embed_passages(texts)

    async def hint(
        self, decision: Decision, lang: str, token_budget: int
    ) -> tuple[list[Found], str]:
        """The entries of a hint decision, and the hint block to show."""
        return await hint_of(self._system.read_entry, decision, lang, token_budget)
