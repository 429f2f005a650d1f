"""The async face of the session logs for the API and the dreamer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from somnid.sessions.archive import restore_processed
from somnid.sessions.logs import SessionLogs
from somnid.sessions.records import Appended, Closed, Message, NoDream, PendingLog, ToolCall
from somnid.sessions.redact import Scrubbed, phrases, redact_logs
from somnid.sessions.transcript import Turn, list_logs, log_turns

ARCHIVE_ROLES = ("user", "agent")

log = logging.getLogger(__name__)

_T = TypeVar("_T")


class SessionService:
    """The async face of :class:`SessionLogs` for the API.

    Blocking work runs on a small pool of its own, so fsync-bound capture never starves
    the default pool others use. A session's requests queue on an asyncio lock before they
    take a thread: 32 writers to one session hold one thread, not 32.
    """

    def __init__(self, logs: SessionLogs, *, workers: int = 8) -> None:
        self.logs = logs
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="somnid-capture")
        self._gates: dict[str, tuple[asyncio.Lock, list[int]]] = {}
        self._archive: tuple[tuple[tuple[str, int, int], ...], list[Turn]] = ((), [])
        # each archived file's lines, by name, with the (ctime, size) they were read at
        self._archived: dict[str, tuple[tuple[int, int], list[Turn]]] = {}
        self._archive_lock = threading.Lock()
        self._stopping = False
        self.on_capture: Callable[[], None] = lambda: None
        """Told of every capture: a conversation is live (the sleep scheduler's idle clock)."""

    async def start(self) -> None:
        """Read back which sessions are never to be dreamed and the line ids already
        written (see :meth:`SessionLogs.recall`); before any capture."""
        count, ids = await self._run(self.logs.recall)
        if count:
            log.info("%d sessions are marked never to dream", count)
        if ids:
            log.info("%d line ids read back from the recent session logs", ids)

    async def append_messages(self, session_id: str, messages: Sequence[Message]) -> Appended:
        self.on_capture()
        async with self._gate(session_id):
            return await self._run(self.logs.append_messages, session_id, messages)

    async def append_tool(self, session_id: str, tool: ToolCall) -> Appended:
        self.on_capture()
        async with self._gate(session_id):
            return await self._run(self.logs.append_tool, session_id, tool)

    async def close(self, session_id: str) -> Closed:
        async with self._gate(session_id):
            return await self._run(self.logs.close, session_id)

    async def close_all(self) -> list[Closed]:
        return await self._run(self.logs.close_all)

    async def mark_no_dream(self, session_id: str) -> NoDream:
        async with self._gate(session_id):
            return await self._run(self.logs.mark_no_dream, session_id)

    async def pending_logs(self) -> list[PendingLog]:
        """See :meth:`SessionLogs.pending_logs`; ``logs.is_open(path)`` needs no thread."""
        return await self._run(self.logs.pending_logs)

    def pending_count(self) -> int:
        """How many logs wait for a dream (:meth:`SessionLogs.pending_logs`). Blocking."""
        return len(self.logs.pending_logs())

    async def mark_processed(self, path: Path, *, skipped: bool = False) -> tuple[Path, str]:
        """Archive a consolidated (or, ``skipped``, a ``dream: false``) log: see
        :meth:`SessionLogs.mark_processed`."""
        return await self._run(functools.partial(self.logs.mark_processed, skipped=skipped), path)

    async def archived_lines(self) -> list[Turn]:
        """The user's and the agent's lines of every archived log, oldest first (``log``
        names the file, ``speaker`` and ``timestamp`` say who and when), but for logs marked
        ``dream: false``: a session kept out of long-term memory stays out of its recall.
        The same list until a file in the archive changed; then only the changed and new
        files are read."""
        return await self._run(self._archived_lines)

    def _archived_lines(self) -> list[Turn]:
        with self._archive_lock:  # a recall during the start's read waits for it, once
            return self._read_archive()

    def _read_archive(self) -> list[Turn]:
        stamp: list[tuple[str, int, int]] = []
        paths: list[Path] = []
        for log_file in list_logs(self.logs.layout, live=False, archived=True):
            try:
                stat = log_file.path.stat()
            except OSError:
                continue
            stamp.append((log_file.path.name, stat.st_ctime_ns, stat.st_size))  # see file_mark
            paths.append(log_file.path)
        key = tuple(stamp)
        if key == self._archive[0]:
            return self._archive[1]
        known, read = self._archived, {}
        turns: list[Turn] = []
        for (name, changed, size), path in zip(stamp, paths, strict=True):
            if self._stopping:
                return turns  # part of it, never kept: the daemon is stopping
            lines = known.get(name)
            if lines is None or lines[0] != (changed, size):
                turns_of = log_turns(
                    path, self.logs.clock.tz, roles=ARCHIVE_ROLES, dreamable_only=True
                )
                lines = ((changed, size), turns_of)
            read[name] = lines
            turns.extend(lines[1])
        self._archived, self._archive = read, (key, turns)
        return turns

    async def reopen_processed(self, stems: list[str]) -> list[str]:
        """Put the processed logs ``stems`` back among the pending ones (the dream that
        consolidated them was reverted): the stems that were moved back."""
        reopened = []
        for stem in stems:
            kept_out = self.logs.never_dreamed
            moved = await self._run(restore_processed, self.logs.layout, stem, kept_out)
            if moved is not None:
                reopened.append(stem)
        return reopened

    async def scrub(self, texts: list[str]) -> list[Scrubbed]:
        """Replace every line of ``texts`` (a phrase each, see
        :func:`somnid.sessions.redact.phrases`) by ``[REDACTED]`` in every session log,
        live and archived: the logs changed, and how many replacements each."""
        wanted = phrases(texts)
        try:
            return await self._run(redact_logs, self.logs, wanted)
        finally:
            self._archive, self._archived = ((), []), {}  # read the archive again

    async def stop(self) -> None:
        """Close every open log and refuse further entries; then release the pool."""
        self._stopping = True  # a read of the archive under way ends at its next file
        try:
            closed = await self._run(self.logs.stop)
            if closed:
                log.info("closed %d open session logs", len(closed))
        finally:
            await asyncio.to_thread(self._pool.shutdown, wait=True)

    async def _run(self, fn: Callable[..., _T], *args: Any) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, fn, *args)

    @contextlib.asynccontextmanager
    async def _gate(self, session_id: str) -> AsyncIterator[None]:
        gate = self._gates.get(session_id)
        if gate is None:
            gate = self._gates[session_id] = (asyncio.Lock(), [0])
        lock, users = gate
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0 and self._gates.get(session_id) is gate:
                del self._gates[session_id]
