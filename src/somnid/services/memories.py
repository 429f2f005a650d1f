"""Memory use-cases: create, read, list, update, archive, restore, reinforce.

Async on the outside, the blocking store in a worker thread on the inside. Every change is
announced to the registered listeners (the index subscribes) after the file is on disk. A
write and its announcement run to their end even when the caller is cancelled (a dream cut
short, a request the shutdown ends): the thread writes on regardless, and a file on disk
that was never announced would be taken for a hand edit.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any, Literal

from somnid import errors
from somnid.errors import Conflict, InvalidInput, PreconditionFailed, StorageError, Unavailable
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry, vitals_from_meta
from somnid.memory.kinds import (
    Kind,
)
from somnid.memory.lifecycle import record_usage
from somnid.memory.names import is_name
from somnid.provenance import for_anyone
from somnid.services.entry_fields import checked_fields, new_entry_meta, parse_due
from somnid.services.profile_names import existing_profile, profile_asked, profile_name
from somnid.store import frontmatter
from somnid.store.fields import check_fields
from somnid.store.health import State
from somnid.store.layout import Layout
from somnid.store.memories import MemoryStore
from somnid.store.reader import BrokenReport
from somnid.store.removal import Version as Version  # the type of a purge's If-Match

log = logging.getLogger(__name__)

UPKEEP_QUIET_S = 2.0
"""Upkeep leaves a file alone this long after someone else modified it."""

ChangeListener = Callable[[Entry | None, str], Awaitable[None]]


_CLOSED_STATUS = {"completed": "completed", "cancelled": "cancelled", "expired": "expired"}


@dataclass(frozen=True, slots=True)
class Page:
    items: list[Entry]
    total: int
    offset: int
    limit: int


class MemoryService:
    def __init__(self, store: MemoryStore, clock: Clock) -> None:
        self._store = store
        self.clock = clock
        self._listeners: list[ChangeListener] = []
        self._missed: dict[str, Entry | None] = {}  # path -> notice a listener failed
        self._writing = 0
        self._in_flight: set[asyncio.Task[Any]] = set()  # writes whose caller was cancelled
        self.writes_begun = 0
        """Writes started so far: with :attr:`writing`, how history tells a write of its
        own (on disk, not yet announced) from a hand edit."""
        self.held_by: Callable[[], str | None] | None = None  # a person's git operation, said

    @property
    def writing(self) -> bool:
        """A write is under way: its file may be on disk and not yet announced."""
        return self._writing > 0

    @contextlib.asynccontextmanager
    async def _announced(self) -> AsyncIterator[None]:
        """Around a write and its announcement (:attr:`writing`)."""
        self._writing += 1
        self.writes_begun += 1
        try:
            yield
        finally:
            self._writing -= 1

    async def _written(
        self,
        write: Callable[[], Entry],
        left: PurePath | None = None,
        *,
        tell: Callable[[Entry], bool] = lambda _entry: True,
    ) -> Entry:
        """``write`` in a worker thread, then announced: ``left`` (the path it moved the entry
        from) as gone, and the entry (if ``tell`` says so). Shielded: a cancelled caller
        leaves both to finish (:meth:`drain` waits for them); :meth:`check_not_held` first."""
        self.check_not_held()

        async def whole() -> Entry:
            async with self._announced():
                entry = await asyncio.to_thread(write)
                if left is not None:
                    await self.notify(None, str(left))
                if tell(entry):
                    await self.notify(entry, str(entry.path))
                return entry

        task = asyncio.ensure_future(whole())
        self._in_flight.add(task)
        task.add_done_callback(self._settled)
        return await asyncio.shield(task)

    def _settled(self, task: asyncio.Task[Any]) -> None:
        self._in_flight.discard(task)  # a caller that waited got its error; a cancelled one:
        if not task.cancelled() and (error := task.exception()) is not None:
            log.debug("a write ended in %s", type(error).__name__)

    async def drain(self) -> None:
        """Wait for the writes still under way whose callers were cancelled (at shutdown:
        before history's last commit, which then takes them)."""
        while self._in_flight:
            await asyncio.wait(list(self._in_flight))

    def subscribe(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)

    async def notify(self, entry: Entry | None, path: str) -> None:
        """Tell the listeners (the index) of a change that is on disk. A listener that
        cannot keep up because the disk is full or read-only does not fail the write: the
        file is the truth. Its notice is given again with the next change (and any sync
        catches up as well)."""
        missed, self._missed = self._missed, {}
        missed.pop(path, None)
        for again, was in [*missed.items(), (path, entry)]:
            for listener in self._listeners:
                try:
                    await listener(was, again)
                except StorageError as exc:
                    self._missed[again] = was
                    log.warning("the index missed %s, to be told again: %s", again, exc.detail)
                    break
                except Exception:  # the write is done: it is not failed by what follows it,
                    log.exception("a listener could not take %s", again)  # nor kept from
                    continue  # the listeners after this one (history, sync)

    @property
    def layout(self) -> Layout:
        return self._store.layout

    async def scan(self, kinds: tuple[Kind, ...], *, archived: bool = False) -> list[Entry]:
        """Every readable entry of ``kinds`` (broken files are reported, not returned)."""
        return await asyncio.to_thread(self._store.scan, kinds, archived=archived)

    def _named(self, kind: Kind, name: str, *, archived: bool = False) -> str:
        """The entry ``name`` asks for: a profile may be asked for by its user id
        (:mod:`somnid.services.profile_names`), and a name in another Unicode form than its
        folder's is that entry's. Blocking: call it in the worker thread."""
        if kind is Kind.PROFILE and name.strip():
            name = profile_asked(self._store, name)
        return self._spelled(kind, name, archived)

    def _spelled(self, kind: Kind, name: str, archived: bool) -> str:
        """``name`` as the folder on disk spells it. A Mac, and some keyboards, send "é" as
        "e" and a combining accent (NFD); somnid writes names composed (NFKC). Asked so,
        an entry made as "café" was 404 on read while its create had said 409 (it exists).
        An ASCII name has no other form: it is taken as it is, without a look on disk."""
        return name if name.isascii() else self._found(kind, name, archived) or name

    def _found(self, kind: Kind, name: str, archived: bool) -> str | None:
        forms = (unicodedata.normalize(form, name) for form in ("NFC", "NFKC", "NFD"))
        for form in dict.fromkeys((name, *forms)):  # a decomposed name may pass the limits
            if is_name(form) and self._store.exists(kind, form, archived=archived):
                return form
        return None

    def spelling(self, kind: Kind, name: str) -> str:
        """``name`` as its live or archived folder spells it, else as somnid writes names
        (NFKC): for history and purge, which find an entry by its folders. Blocking."""
        found = self._found(kind, name, False) or self._found(kind, name, True)
        composed = unicodedata.normalize("NFKC", name)
        return found or (composed if is_name(composed) else name)

    async def exists(self, kind: Kind, name: str, *, archived: bool = False) -> bool:
        return await asyncio.to_thread(
            lambda: self._store.exists(
                kind, self._named(kind, name, archived=archived), archived=archived
            )
        )

    async def mutate(
        self,
        kind: Kind,
        name: str,
        change: Callable[[frontmatter.Document], None],
        *,
        unless_etag: str | None = None,
        upkeep: bool = False,
    ) -> Entry:
        """Read, ``change`` the document in place, write it back; announced unless it still
        has ``unless_etag``. ``upkeep`` (a use noted, a score decayed) yields to a person:
        BeingWritten when another changed it in the last :data:`UPKEEP_QUIET_S` seconds."""
        quiet = self._upkeep_held(upkeep)
        return await self._written(
            lambda: self._store.mutate(kind, self._named(kind, name), change, quiet_s=quiet),
            tell=lambda entry: unless_etag is None or entry.etag != unless_etag,
        )

    def check_not_held(self) -> None:
        """Unavailable while a person's git operation waits (its --abort undoes a write)."""
        if self.held_by is not None and (held := self.held_by()) is not None:
            raise Unavailable(f"{held}: nothing is written until it is finished or aborted",
                              code="git_under_way")  # fmt: skip

    def _upkeep_held(self, upkeep: bool) -> float:
        """Upkeep's quiet time; BeingWritten while a person's git operation holds writes."""
        if upkeep and self.held_by is not None and self.held_by() is not None:
            raise errors.BeingWritten("a person's git operation waits in the data dir: later")
        return UPKEEP_QUIET_S if upkeep else 0.0

    # Blocking doors for code that already runs in a worker thread (history, status).

    def read_path(self, path: Path) -> Entry | None:
        """The live entry in the file at ``path`` (absolute), None if it is no live entry;
        BrokenFile for a broken one. Blocking."""
        return self._store.read_path(path)

    def copies_archived_from(self, kind: Kind, name: str) -> list[str]:
        return self._store.copies_archived_from(kind, name)  # archived by another name

    def exclusive(self) -> AbstractContextManager[bool]:
        """No write through the store while held (sync checks, then writes, the files of a
        merge with none landing in between). Blocking; keep it short."""
        return self._store.exclusive()

    def twin_of(self, path: Path) -> str | None:
        """:meth:`MemoryStore.twin_of`: a live entry whose name differs only in case from
        the one ``path`` would be. Blocking."""
        return self._store.twin_of(path)

    def hold(self, specs: list[str]) -> AbstractContextManager[None]:
        """:meth:`MemoryStore.hold`: no write to ``specs`` while held (409 ``purge_running``)."""
        return self._store.hold(specs)

    @contextlib.asynccontextmanager
    async def holding(self, specs: list[str]) -> AsyncIterator[None]:
        """:meth:`hold` from the event loop: taken and let go in a worker thread (the store's
        lock may be held a while, by a commit)."""
        held = self._store.hold(specs)
        await asyncio.to_thread(held.__enter__)
        try:
            yield
        finally:
            await asyncio.to_thread(held.__exit__, None, None, None)

    def put_raw(
        self,
        path: Path,
        data: bytes | None,
        *,
        prune_folder: bool = False,
        executable: bool | None = None,
    ) -> None:
        """:meth:`MemoryStore.put_raw`: a file of the data dir back as ``data`` (None:
        removed). Blocking; the caller announces the change (history's revert does)."""
        self._store.put_raw(path, data, prune_folder=prune_folder, executable=executable)

    def remove_paths(self, specs: list[str], *, unchanged: Version | None = None) -> list[str]:
        """:meth:`MemoryStore.remove_paths`: what exists of ``specs`` deleted (unless the
        live entry ``unchanged`` names changed). Blocking."""
        return self._store.remove_paths(specs, unchanged=unchanged)

    def set_aside(self, rels: list[str], folder: str) -> list[tuple[str, str]]:
        """:meth:`MemoryStore.set_aside`: files copied to ``folder`` of the data dir, out of
        history's and sync's reach; (from, to) of each. Blocking."""
        return self._store.set_aside(rels, folder)

    def counts(self) -> dict[str, int]:
        """Entry files per kind; parses none of them. Blocking."""
        return {kind.value: self._store.count(kind) for kind in Kind}

    def broken(self, *, recheck: bool = True) -> list[BrokenReport]:
        """Files broken by hand, those since mended left out (unless not ``recheck``: right
        after a scan). Blocking."""
        if recheck:
            self._store.recheck_broken()
        return self._store.broken()

    def storage_check(self) -> tuple[State, str | None]:
        """Whether the data dir takes writes (health's storage component). Blocking."""
        return self._store.health.check()

    def storage_failed(self, exc: StorageError) -> None:
        """A write elsewhere (a session log's append) failed: health says so."""
        self._store.health.failed(exc)

    async def get(self, kind: Kind, name: str, *, archived: bool = False) -> Entry:
        return await asyncio.to_thread(
            lambda: self._store.read(
                kind, self._named(kind, name, archived=archived), archived=archived
            )
        )

    async def list(
        self,
        kinds: tuple[Kind, ...],
        *,
        text: str | None = None,
        archived: bool | Literal["only"] = False,
        offset: int = 0,
        limit: int = 50,
    ) -> Page:
        """A page of the live entries of ``kinds``, the archived too, or (``"only"``) the
        archived alone; ``text`` a case-insensitive substring."""
        entries = await asyncio.to_thread(self._store.scan, kinds, archived=bool(archived))
        if archived == "only":
            entries = [entry for entry in entries if entry.archived]
        if text:
            needle = text.casefold()
            entries = [entry for entry in entries if needle in _haystack(entry)]
        return Page(entries[offset : offset + limit], len(entries), offset, limit)

    async def create(
        self,
        kind: Kind,
        name: str | None,
        *,
        description: str = "",
        body: str = "",
        fields: dict[str, Any] | None = None,
    ) -> Entry:
        fields = checked_fields(kind, dict(fields or {}))
        if kind is Kind.PROFILE and name and name.strip():
            existing = await asyncio.to_thread(existing_profile, self._store, name)
            if existing is not None:  # under another name: the store would not see it
                raise Conflict(f"a profile for {name!r} exists: {existing!r}", name=existing)
            if profile_name(name) != name:
                fields.setdefault("user_id", name.strip())  # whose it is, as given
                name = profile_name(name)
        check_fields(fields)
        if "description" in fields:  # one description: given twice, they must agree
            given = fields.pop("description")
            if description and given != description:
                raise InvalidInput("description is given twice, differently: once is enough")
            description = description or str(given or "")
        now = self.clock.now()
        meta = new_entry_meta(kind, now, description, fields)
        return await self._written(lambda: self._create(kind, name, meta, body, now))

    def _create(
        self, kind: Kind, name: str | None, meta: dict[str, Any], body: str, now: dt.datetime
    ) -> Entry:
        if name is not None and name.strip():
            return self._store.create(kind, name, meta=meta, body=body)
        if kind is Kind.INTENTION:
            choose = lambda: self._store.next_sequence_name(kind, "pi", now.date())  # noqa: E731
        elif kind is Kind.EPISODE:
            choose = lambda: self._store.free_name(kind, f"ep-{now:%Y%m%d-%H%M%S}")  # noqa: E731
        else:
            raise InvalidInput(f"a {kind.value} needs a name")
        # The free name is chosen under the store's write lock: chosen before it, 32
        # concurrent creates picked the same name and all but one got 409.
        return self._store.create_unnamed(kind, choose, meta=meta, body=body)

    async def update(
        self,
        kind: Kind,
        name: str,
        *,
        description: str | None = None,
        body: str | None = None,
        fields: dict[str, Any] | None = None,
        if_match: str | None = None,
        if_none_match: tuple[str, ...] | None = None,
        archived: bool = False,
    ) -> Entry:
        """Change an entry; ``if_match`` refuses a change of another version than the one
        read, ``if_none_match`` (``("*",)`` or ETags) one of any (or a listed) version (412)."""
        if if_none_match is not None:
            current = await self.get(kind, name, archived=archived)
            if "*" in if_none_match or current.etag in if_none_match:
                raise PreconditionFailed(
                    f"{kind.value} {name!r} exists in a version If-None-Match excludes",
                    etag=current.etag,
                )
            if_match = if_match or current.etag  # the version checked is the one changed
        if fields and kind is Kind.INTENTION and fields.get("due") not in (None, ""):
            fields = {**fields, "due": parse_due(fields["due"], self.clock.tz)}
        if fields:
            fields = checked_fields(kind, dict(fields))
            given = fields.get("description")
            if given is not None and description is not None and given != description:
                raise InvalidInput("description is given twice, differently: once is enough")
        return await self._written(
            lambda: self._store.update(
                kind,
                self._named(kind, name, archived=archived),
                description=description,
                body=body,
                fields=fields,
                if_match=if_match,
                archived=archived,
            )
        )

    async def archive(
        self,
        kind: Kind,
        name: str,
        *,
        reason: str = "archived",
        if_match: str | None = None,
        upkeep: bool = False,
    ) -> Entry:
        """Move the entry into the archive; ``upkeep`` (a retirement, an expiry) yields to a
        person who may be writing the file, as :meth:`mutate`'s does."""
        if not kind.archivable:
            raise InvalidInput(f"{kind.value} entries are not archived")
        before = await self.get(kind, name)
        stamp = {"status": _CLOSED_STATUS.get(reason, reason)} if kind is Kind.INTENTION else None
        quiet = self._upkeep_held(upkeep)
        return await self._written(
            lambda: self._store.archive(
                kind, before.name, reason=reason, if_match=if_match, stamp=stamp, quiet_s=quiet
            ),
            before.path,
        )

    async def restore(self, kind: Kind, archived_name: str) -> Entry:
        before = await self.get(kind, archived_name, archived=True)
        return await self._written(lambda: self._store.restore(kind, before.name), before.path)

    async def record_usage(self, kind: Kind, name: str) -> Entry:
        """The entry was used: reinforce it (spaced repetition; episodes reconsolidate)."""
        now = self.clock.now()

        def reinforce(doc: frontmatter.Document) -> None:
            after = record_usage(vitals_from_meta(doc.meta, self.clock.tz), kind, now.date())
            doc.meta["stability"] = after.stability
            doc.meta["score"] = round(after.score, 4)
            doc.meta["last_used"] = now

        with for_anyone():  # reads of many sessions: one commit a window, not one each
            return await self.mutate(kind, name, reinforce, upkeep=True)


def _haystack(entry: Entry) -> str:
    return " ".join((entry.name, entry.description, entry.entry_type, entry.body)).casefold()
