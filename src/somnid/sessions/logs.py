"""Session capture: the conversation of each client session appended to its log, durably.

:class:`SessionLogs` is the blocking writer (plain ``def``; safe from any thread);
:class:`somnid.sessions.service.SessionService` is its async face for the API.

- A log opens lazily at a session's first entry: ``session-log/<day>_<NNN>.md``, ``<day>``
  in the configured zone, NNN one more than the highest number that day among live *and*
  archived logs (never re-used). Its front-matter is written at once (``status: pending``).
- One lock per session: its entries land in order; different sessions write in parallel.
  An append is ``O_APPEND`` + ``fsync`` before it returns: acknowledged means on disk.
- A part that would grow past ``capture.log_max_bytes`` is finalised (``end_time``,
  ``message_count``, ``continued_by``) and the session continues in a new log with
  ``part: N`` and ``continues: <previous stem>``. An append larger than the cap gets a part
  of its own.
- :meth:`SessionLogs.close` finalises the front-matter (atomic rewrite under the session's
  lock; ``status`` stays ``pending`` for the dreamer) and forgets the writer. The next entry
  of that session opens a new log, with a new number.
- The writer remembers which file it created (device and inode) and opens it without
  ``O_CREAT``: a log that was moved or replaced behind its back (a dream archiving it) is
  never re-created or appended to; the session continues in a new part instead. Logs left
  open by a crash stay pending without ``end_time``; nothing resumes them.
- :meth:`SessionLogs.mark_no_dream` ("never dream this") writes ``dream: false`` into the
  front-matter of the session's pending logs, closed and open (atomic rewrites under the
  session's lock). The session keeps the flag, across restarts too (:mod:`.no_dream`): its
  later parts, and any log it opens after a close, start with ``dream: false``. A dream
  archives such logs unread.
- A line may carry the client's ``id``: a line whose id this session already wrote is
  skipped (``duplicate``), so a client that re-sends after a lost answer writes it once. The
  id is written in the log with its block (an HTML comment line, in the same append), and
  read back from the recent logs at start (:meth:`SessionLogs.recall`): a re-send that spans
  a restart, or a crash, is still written once (see :mod:`.seen`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from somnid.config import CaptureSettings
from somnid.errors import BrokenFile, Conflict, InvalidInput, StorageError, Unavailable
from somnid.memory.clock import Clock, in_range
from somnid.memory.scrub import scrub
from somnid.sessions import parts, rewrite, transcript
from somnid.sessions.archive import LOG_MOVES, archive_processed
from somnid.sessions.no_dream import NoDreamSessions
from somnid.sessions.parts import OpenLog
from somnid.sessions.pending import PendingStates
from somnid.sessions.records import (
    DEFAULT_USER,
    Appended,
    Closed,
    Message,
    NoDream,
    PendingLog,
    SkipReason,
    ToolCall,
    check_printable,
    check_session_id,
    is_pending,
    wants_dream,
)
from somnid.sessions.seen import SeenIds, written_id
from somnid.store import frontmatter
from somnid.store.atomic import append_durably, write_atomic
from somnid.store.layout import Layout
from somnid.store.safe import enterable

log = logging.getLogger(__name__)


@dataclass(slots=True, eq=False)
class _Session:
    session_id: str
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: OpenLog | None = None
    retired: bool = False


class SessionLogs:
    def __init__(self, layout: Layout, clock: Clock, capture: CaptureSettings) -> None:
        self.layout = layout
        self.clock = clock
        self.capture = capture
        self._registry = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._open: dict[Path, str] = {}
        self._numbering = threading.Lock()
        self._numbers: dict[dt.date, int] = {}
        self._no_dream = NoDreamSessions(layout.root)
        self._seen = SeenIds()
        self._pending = PendingStates(layout.root)
        self._stopped = False

    # ------------------------------------------------------------------ capture

    def append_messages(self, session_id: str, messages: Sequence[Message]) -> Appended:
        """Append messages in order, as one write. Empty ones are skipped, long ones cut."""
        check_session_id(session_id)
        for message in messages:
            for value, what in (
                (message.user_id, "user id"),
                (message.chat_type, "chat type"),
                (message.speaker, "speaker"),
            ):
                if value is not None:
                    check_printable(value, what)
        if not self.capture.enabled:
            return self._disabled(len(messages))
        now = self._now()
        limit = self.capture.max_message_chars
        prepared: list[tuple[int, str | None, str]] = []
        skipped: list[tuple[int, SkipReason]] = []
        truncated = 0
        opener: Message | None = None
        for index, message in enumerate(messages):
            # Obvious secrets never reach the disk (the log, then a dream, then history);
            # the text alone is scrubbed: one's own patterns never touch a block's header.
            text = scrub(transcript.clean_text(message.text), self.capture.scrub_patterns)
            if not text:
                skipped.append((index, "empty"))
                continue
            text, was_cut = transcript.cut(text, limit)
            truncated += was_cut
            opener = opener or message
            when = self._moment(message.timestamp) or now
            line_id = self._written_id(message.id)
            block = transcript.message_block(
                message.role, text, when, message.speaker, line_id=line_id
            )
            prepared.append((index, line_id, block))
        if opener is None:
            return Appended(None, 0, 0, skipped, 0)
        user, chat_type = opener.user_id, opener.chat_type
        with self._session(session_id, writing=True) as session:
            blocks, duplicates = self._seen.fresh(session_id, prepared)
            skipped = sorted(skipped + duplicates)
            if not blocks:
                current = session.log
                path = self.layout.relative(current.path) if current else None
                return Appended(path, 0, 0, skipped, current.count if current else 0)
            written = self._write(session, blocks, user, chat_type)
            self._seen.remember(session_id, [line_id for _, line_id, _ in prepared])
            return Appended(
                self.layout.relative(written.path), len(blocks), truncated, skipped, written.count
            )

    def append_tool(self, session_id: str, tool: ToolCall) -> Appended:
        """Append one tool call block."""
        check_session_id(session_id)
        if not self.capture.enabled:
            return self._disabled(1)
        if not transcript.clean_text(tool.call):  # nothing says what was called
            return Appended(None, 0, 0, [(0, "empty")], 0)
        limit = self.capture.max_message_chars
        when = self._moment(tool.timestamp) or self._now()
        line_id = self._written_id(tool.id)
        patterns = self.capture.scrub_patterns
        block = transcript.tool_block(
            scrub(tool.call, patterns),
            scrub(tool.result, patterns),
            when,
            error=None if tool.error is None else scrub(tool.error, patterns),
            reason=None if tool.reason is None else scrub(tool.reason, patterns),
            limit=limit,
            line_id=line_id,
        )
        with self._session(session_id, writing=True) as session:
            blocks, duplicates = self._seen.fresh(session_id, [(0, line_id, block)])
            if not blocks:
                current = session.log
                path = self.layout.relative(current.path) if current else None
                return Appended(path, 0, 0, duplicates, current.count if current else 0)
            written = self._write(session, blocks, None, None)
            self._seen.remember(session_id, [line_id])
            return Appended(self.layout.relative(written.path), 1, 0, [], written.count)

    def close(self, session_id: str) -> Closed:
        """Finalise the session's open log; ``Closed(None)`` if it has none."""
        check_session_id(session_id)
        with self._session(session_id) as session:
            current = session.log
            if current is None:
                return Closed(None)
            self._finalise(current, last=True)
            session.log = None
            return Closed(self.layout.relative(current.path), current.part, current.count)

    def close_all(self) -> list[Closed]:
        """Close every open log (before a dream, at shutdown); returns those closed."""
        with self._registry:
            session_ids = list(self._sessions)
        closed: list[Closed] = []
        for session_id in session_ids:
            result = self.close(session_id)
            if result.path is not None:
                closed.append(result)
        return closed

    def mark_no_dream(self, session_id: str) -> NoDream:
        """Never dream this session: write ``dream: false`` into its pending logs (closed
        ones and the open one), each atomically, under the session's lock; from now on its
        new logs and parts start with it. Logs already processed, and logs whose
        front-matter a person broke, are left alone. Idempotent."""
        check_session_id(session_id)
        with self._session(session_id) as session:
            self._no_dream.add(session_id)  # on disk first: it outlives its logs
            current = session.log
            marked: list[PurePosixPath] = []
            for path in transcript.live_files(self.layout):
                if current is not None and path == current.path:
                    done = parts.mark_open(self.layout.root, current)
                else:
                    done = self._mark_closed(path, session_id)
                if done:
                    marked.append(self.layout.relative(path))
            return NoDream(marked, self.layout.relative(current.path) if current else None)

    def never_dreamed(self, session_id: str) -> bool:
        """Whether ``session_id`` was marked "never dream this"."""
        return session_id in self._no_dream

    def recall(self) -> tuple[int, int]:
        """At start, before any capture: remember as "never dream this" every session marked
        so before (:mod:`.no_dream`) or with a pending log marked ``dream: false``, and the line ids
        of the recent logs (:meth:`.seen.SeenIds.recall`). Answers how many of each."""
        found: list[str] = []
        for path in transcript.live_files(self.layout):
            meta = rewrite.read_meta(self.layout.root, path)
            if meta is None or not is_pending(meta) or wants_dream(meta):
                continue
            chat_id = meta.get("chat_id")
            if chat_id is not None and str(chat_id):
                found.append(str(chat_id))
        return self._no_dream.load(found), self._seen.recall(self.layout)

    def stop(self) -> list[Closed]:
        """Refuse further entries, then close every open log."""
        with self._registry:
            self._stopped = True
        return self.close_all()

    # ------------------------------------------------------------------ for the dreamer

    def pending_logs(self) -> list[PendingLog]:
        """Live logs (directly in ``session-log/``) whose ``status`` is not ``processed``,
        oldest first, each with whether a session still appends to it and whether it may be
        dreamed (:class:`~somnid.sessions.pending.PendingStates`)."""
        found = self._pending.of(transcript.live_files(self.layout))
        return [PendingLog(path, self.is_open(path), dream) for path, dream in found]

    def mark_processed(self, path: Path, *, skipped: bool = False) -> tuple[Path, str]:
        """Archive a closed pending log as processed (see
        :func:`somnid.sessions.archive.archive_processed`): where it went, and a note when
        its front-matter could not be set. A log a session still writes to is refused."""
        if self.is_open(path):
            raise Conflict(f"session log {path.stem} is still open (a session writes to it)")
        return archive_processed(self.layout, path, skipped=skipped)

    def is_open(self, path: Path) -> bool:
        """Whether a session is appending to ``path`` (absolute): leave such a log alone."""
        with self._registry:
            return path in self._open

    # ------------------------------------------------------------------ internals

    def _now(self) -> dt.datetime:
        return self.clock.now().astimezone(self.clock.tz).replace(microsecond=0)

    def _moment(self, when: dt.datetime | None) -> dt.datetime | None:
        """A client's timestamp as the log writes it: in the configured zone (a naive one
        is taken to be in it already), to the second."""
        if when is None:
            return None
        if not in_range(when):
            raise InvalidInput(f"timestamp {when.isoformat()} is outside the years somnid reads")
        if when.tzinfo is None:
            when = when.replace(tzinfo=self.clock.tz)
        return when.astimezone(self.clock.tz).replace(microsecond=0)

    def _written_id(self, line_id: str | None) -> str | None:
        return None if line_id is None else written_id(line_id, self.capture.scrub_patterns)

    def _disabled(self, count: int) -> Appended:
        return Appended(None, 0, 0, [(index, "disabled") for index in range(count)], 0)

    @contextlib.contextmanager
    def _session(self, session_id: str, *, writing: bool = False) -> Iterator[_Session]:
        """Hold the session's lock. A session without an open log leaves the registry when
        released; a thread that waited on its lock meanwhile starts over with a fresh one.
        Once stopped, nothing may write any more (closing still works)."""
        while True:
            with self._registry:
                if writing and self._stopped:
                    raise Unavailable("somnid is shutting down; capture is closed")
                session = self._sessions.get(session_id)
                if session is None:
                    session = self._sessions[session_id] = _Session(session_id)
            session.lock.acquire()
            if not session.retired:
                break
            session.lock.release()
        try:
            yield session
        finally:
            if session.log is None:
                with self._registry:
                    session.retired = True
                    if self._sessions.get(session_id) is session:
                        del self._sessions[session_id]
            session.lock.release()

    def _write(
        self, session: _Session, blocks: list[str], user: str | None, chat_type: str | None
    ) -> OpenLog:
        data = "".join(blocks).encode("utf-8")  # their texts scrubbed as they were made
        current = session.log or self._open_new(session, user, chat_type)
        fd = parts.reopen(current)
        if fd is None:
            log.warning(
                "session log %s was moved or replaced; the session continues in a new part",
                current.path.name,
            )
            self._forget(current)
            current = self._open_new(session, current.user, current.chat_type, after=current)
            fd = parts.must_reopen(current)
        try:
            size = os.fstat(fd).st_size
            if current.count and size + len(data) > self.capture.log_max_bytes:
                os.close(fd)
                fd = -1
                previous = current
                current = self._open_new(session, previous.user, previous.chat_type, after=previous)
                self._finalise(previous, continued_by=current.stem)
                fd = parts.must_reopen(current)
                size = os.fstat(fd).st_size
            append_durably(fd, data, size, current.path)
            current.size = size + len(data)
        finally:
            if fd >= 0:
                os.close(fd)
        current.count += len(blocks)
        current.total += len(blocks)
        return current

    def _open_new(
        self,
        session: _Session,
        user: str | None,
        chat_type: str | None,
        *,
        after: OpenLog | None = None,
    ) -> OpenLog:
        """Create the next log with its front-matter; it becomes the session's log."""
        now = self._now()
        day = now.date()
        meta: dict[str, Any] = {
            "session_id": "",
            "chat_id": session.session_id,
            "user": user or DEFAULT_USER,
        }
        if chat_type:
            meta["chat_type"] = chat_type
        if after is not None:
            meta["part"] = after.part + 1
            meta["continues"] = after.stem
        meta["start_time"] = now
        if session.session_id in self._no_dream:
            meta["dream"] = False
        meta["status"] = "pending"
        folder = self.layout.session_log_dir
        if not enterable(folder):  # ``chmod 600``: its names read, no file made in it
            raise StorageError(f"{folder} is a folder somnid may not read (chmod u+rwx)")
        while True:
            number = self._next_number(day)
            name = transcript.log_name(day, number, self.layout.machine)
            path = self.layout.session_log_dir / name
            meta["session_id"] = path.stem
            text = frontmatter.render(frontmatter.Document(frontmatter.new_meta(meta), ""))
            try:
                write_atomic(
                    path, text.encode("utf-8"), exclusive=True, within=self.layout.memory_dir
                )
            except FileExistsError:
                continue  # a file nobody told us about took the number: take the next
            break
        stat = path.stat()
        opened = OpenLog(
            path,
            part=after.part + 1 if after else 1,
            file_id=(stat.st_dev, stat.st_ino),
            size=stat.st_size,
            user=user or DEFAULT_USER,
            chat_type=chat_type,
            total=after.total if after else 0,
        )
        with self._registry:
            self._open[path] = session.session_id
        session.log = opened
        return opened

    def _next_number(self, day: dt.date) -> int:
        """The folders are read once a day: a number taken meanwhile by a file nobody told
        of is a name that exists, and the writer takes the next one."""
        with self._numbering:
            known = self._numbers.get(day)
            if known is None:
                known = transcript.highest_number(self.layout, day)
            self._numbers[day] = known + 1
            return known + 1

    def _forget(self, current: OpenLog) -> None:
        with self._registry:
            self._open.pop(current.path, None)

    def _finalise(
        self, current: OpenLog, *, last: bool = False, continued_by: str | None = None
    ) -> None:
        self._forget(current)
        parts.finalise(self.layout.root, current, self._now(), last=last, continued_by=continued_by)

    def _mark_closed(self, path: Path, session_id: str) -> bool:
        """``dream: false`` into a closed, pending log of ``session_id``; False if the file
        is not one (another session's, processed, unreadable, or gone)."""
        meta = rewrite.read_meta(self.layout.root, path)
        if not rewrite.pending_of(meta, session_id) or self.is_open(path):
            return False
        with LOG_MOVES:  # read again: a dream may have moved it meanwhile
            try:
                doc = frontmatter.parse(rewrite.read(self.layout.root, path))
            except (OSError, UnicodeDecodeError, BrokenFile):
                return False
            if not rewrite.pending_of(doc.meta, session_id):
                return False
            if wants_dream(doc.meta):
                rewrite.set_before(doc.meta, "status", {"dream": False})
                rewrite.save(path, doc)
        return True
