"""History use-cases for the API and the CLI: list, show, revert a commit or a dream, purge.

Every change first commits what is pending (so it sees every acknowledged write), then runs
git in a worker thread under the committer's lock. A read commits what is pending too, unless
git is busy (a purge's rewrite may take minutes): then it reads what is committed, at once,
beside the rewrite; only a purge's last step, the prune, keeps reads out for its moment
(:mod:`somnid.history.gate`). After a revert or a purge the files it rewrote go through the
one reconcile path (``MemoryService.notify``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from somnid.config import Settings
from somnid.errors import (
    Conflict,
    InvalidInput,
    InvalidName,
    NotFound,
    SomnidError,
    StorageError,
    Unavailable,
)
from somnid.history import log as history_log
from somnid.history import purge as purging
from somnid.history.audit import audit
from somnid.history.committer import Committer
from somnid.history.gate import PruneGate
from somnid.history.git import Git, find_git
from somnid.history.identity import IdentityChange, identity_log
from somnid.history.purge import Purged
from somnid.history.revert import Entry, NothingToRevert, Reverted, revert
from somnid.memory.clock import Clock
from somnid.memory.kinds import Kind
from somnid.memory.names import check_name, slugify
from somnid.provenance import Actor, current_actor
from somnid.services.memories import MemoryService, Version
from somnid.sessions import redact
from somnid.sessions.redact import Scrubbed
from somnid.store.layout import Layout

log = logging.getLogger(__name__)
T = TypeVar("T")
SYSTEM = Actor("somnid", "somnid")


@dataclass(slots=True)
class HistoryStatus:
    enabled: bool
    detail: str | None
    commits: int = 0
    last_error: str | None = None


BEHIND_S = 60.0
"""History is degraded when a write has waited this long for its commit (or three batch
windows, if longer)."""


def off_reason(settings: Settings) -> str | None:
    """Why history is off (None when on): the setting, or no git binary."""
    if not settings.history.enabled:
        return "history.enabled = false"
    if find_git() is None:
        return "the git binary is not installed (apt install git): history is off"
    return None


def _confirms(confirm: str | None, name: str) -> bool:
    """Whether ``confirm`` repeats ``name``: as it is, or as typed at creation (``old vpn``
    became ``old-vpn`` by the store's own name rule)."""
    if confirm is None:
        return False
    try:
        return confirm == name or slugify(confirm) == name
    except InvalidName:
        return False


class History:
    def __init__(
        self,
        layout: Layout,
        memories: MemoryService,
        clock: Clock,
        committer: Committer | None,
        reason: str | None,
    ) -> None:
        self.layout = layout
        self.memories = memories
        self.clock = clock
        self.committer = committer
        self.reason = reason
        self.reopen_logs: Callable[[str], Awaitable[list[str]]] | None = None
        """Set by the composition root: put a dream's processed logs back as pending."""
        self.forget_deleted: Callable[[], Awaitable[None]] | None = None
        """Set by the composition root: leave no copy of a purged entry in the index files."""
        self.scrub_logs: Callable[[list[str]], Awaitable[list[Scrubbed]]] | None = None
        """Set by the composition root: scrub text from the session logs (SessionService)."""
        self.gate = PruneGate()
        self.purging: purging.Progress | None = None
        """The purge running now, if any (one at a time: it holds the committer's lock)."""

    @classmethod
    def build(
        cls,
        settings: Settings,
        layout: Layout,
        memories: MemoryService,
        clock: Clock,
        dreaming: Callable[[], bool],
    ) -> History:
        reason = off_reason(settings)
        committer = None
        if reason is None:
            committer = Committer(
                Git(layout.root),
                layout,
                memories,
                window_s=settings.history.batch_window_s,
                dreaming=dreaming,
            )
            memories.subscribe(committer.entry_changed)
        elif settings.history.enabled:
            log.warning("history: %s", reason)
        return cls(layout, memories, clock, committer, reason)

    async def start(self) -> None:
        if self.committer is not None:
            try:
                await self.committer.start()
            except SomnidError as exc:
                log.warning("history is off: %s", exc.detail)
                self.reason, self.committer = f"could not open the repository: {exc.detail}", None

    async def stop(self) -> None:
        if self.committer is not None:
            await self.committer.stop()

    def status(self) -> HistoryStatus:
        if self.committer is None:
            return HistoryStatus(False, self.reason)
        error = self.committer.last_error
        waited = time.monotonic() - (self.committer.waiting_since or time.monotonic())
        if waited > max(BEHIND_S, 3 * self.committer.window_s):  # (a probe: ok for minutes)
            said = f"history is behind: a write made {waited:.0f} s ago is not committed yet"
            error = said if error is None else f"{said}; {error}"
        if (held := self.committer.git.under_way()) is not None:  # no write is taken meanwhile
            said = f"{held}: nothing is written until it is finished or aborted"
            error = said if error is None or held in error else f"{said}; {error}"
        return HistoryStatus(True, None, self.committer.commits, error)

    def purge_status(self) -> purging.Progress | None:
        """The purge running now (what, how far, how long it should still take), if any."""
        return self.purging

    def _need(self) -> Committer:
        if self.committer is None:
            raise Unavailable(f"history is off: {self.reason}", code="history_off")
        return self.committer

    async def _read(self, call: Callable[[Committer], T]) -> T:
        """Run a read of the repository: never behind a purge or a long commit."""
        committer = self._need()
        await committer.flush(wait=False)

        def run() -> T:
            with self.gate.reading():
                return call(committer)

        return await asyncio.to_thread(run)

    async def _locked(self, call: Callable[[Committer], T]) -> T:
        committer = self._need()
        await committer.flush()

        def run() -> T:
            with committer.lock:
                return call(committer)

        return await asyncio.to_thread(run)

    # --- reading -----------------------------------------------------------------------

    async def commits(
        self, *, offset: int, limit: int, dreams: bool = False, path: str | None = None
    ) -> tuple[list[history_log.Commit], int]:
        if path:
            history_log.check_path(path)
        return await self._read(
            lambda c: history_log.commits(
                c.git, self.layout, offset=offset, limit=limit, dreams=dreams, path=path
            )
        )

    async def show(self, commit: str) -> tuple[history_log.Commit, list[history_log.EntryDiff]]:
        history_log.check_commit(commit)
        return await self._read(lambda c: history_log.diffs(c.git, self.layout, commit))

    async def entry_history(
        self, kind: Kind, name: str, *, offset: int, limit: int
    ) -> tuple[list[tuple[history_log.Commit, list[history_log.EntryDiff]]], int]:
        """The commits that touched one entry (live or archived), newest first, each with
        that entry's diffs: API writes, hand edits, dreams and reverts alike."""
        specs = (await self._entry(kind, name)).specs
        return await self._read(
            lambda c: history_log.entry_log(c.git, self.layout, specs, offset=offset, limit=limit)
        )

    async def identity_changes(
        self, *, offset: int, limit: int, dreams: bool = False
    ) -> tuple[list[IdentityChange], int]:
        """The commits that changed a profile (the agent's about_me, a user's profile),
        newest first, each with its profile diffs and what reverted them: for review."""
        return await self._read(
            lambda c: identity_log(c.git, self.layout, offset=offset, limit=limit, dreams=dreams)
        )

    # --- undo --------------------------------------------------------------------------

    def _not_purging(self) -> None:
        """A change waits for git behind a purge's rewrite (minutes on a long history):
        409 at once rather than a request that hangs that long."""
        if self.purging is not None:
            raise Conflict(
                f"a purge is rewriting the history ({self.purging.kind}/{self.purging.name}): "
                "try again when it ends (GET /v1/history/purge says how long)",
                code="purge_running",
            )

    async def revert(self, commit: str) -> Reverted:
        history_log.check_commit(commit)
        self._not_purging()
        actor = current_actor() or SYSTEM
        done = await self._locked(lambda c: revert(c, commit, actor))
        await self._reindex(done.paths)
        return done

    async def revert_entry(self, kind: Kind, name: str, commit: str) -> Reverted:
        """Undo what ``commit`` changed of one entry only (the rest of the commit stays);
        refused like any revert when a later change touched that entry."""
        history_log.check_commit(commit)
        entry = await self._entry(kind, name)
        self._not_purging()
        actor = current_actor() or SYSTEM
        done = await self._locked(lambda c: revert(c, commit, actor, entry))
        await self._reindex(done.paths)
        return done

    async def _entry(self, kind: Kind, name: str) -> Entry:
        # As its folder spells it: a Mac's decomposed "café" too.
        name = check_name(await asyncio.to_thread(self.memories.spelling, kind, name))
        return Entry(f"{kind.value}/{name}", purging.entry_specs(self.layout, kind, name))

    async def revert_dream(self, dream_id: str) -> Reverted:
        """Undo a dream whole: its commit reverted, and the logs it consolidated pending
        again (through :attr:`reopen_logs`), so the next dream reads them anew."""
        sha = await self._read(lambda c: history_log.find_dream(c.git, dream_id))
        try:
            done = await self.revert(sha)
        except NothingToRevert:  # it wrote no memory: its logs are still to be read again
            done = Reverted(sha, None, [])
        if self.reopen_logs is None:
            return done
        reopened = await self.reopen_logs(dream_id)
        return dataclasses.replace(done, reopened_logs=tuple(reopened))

    # --- forget ------------------------------------------------------------------------

    async def purge(
        self,
        kind: Kind,
        name: str,
        *,
        confirm: str | None,
        history: bool,
        scrub_logs: bool = False,
        phrases: tuple[str, ...] = (),
        if_match: str | None = None,
        none_live: bool = False,
    ) -> Purged:
        """Delete an entry for good (``history``: its past versions too). ``scrub_logs``:
        its text (description and body lines) and ``phrases`` become ``[REDACTED]`` in
        every session log, live and archived, so no tool serves them back verbatim.
        ``if_match``: only while the live entry has that ETag (412 otherwise);
        ``none_live``: only while no live entry has the name (an archived copy's purge)."""
        name = check_name(await asyncio.to_thread(self.memories.spelling, kind, name))
        if not _confirms(confirm, name):
            raise InvalidInput(
                f"purging deletes {kind.value} {name!r} for good: repeat its name as confirm",
                code="confirmation_required",
            )
        if phrases and not scrub_logs:
            raise InvalidInput("phrases are scrubbed from the session logs: set scrubLogs too")
        if history:
            self._need()
        self._not_purging()
        if scrub_logs and self.scrub_logs is None:
            raise Unavailable("the session logs cannot be scrubbed here", code="scrub_off")
        # No archive of it lands between the listing of its copies and the purge (one
        # moved it to a copy the purge never deleted, and the purge answered 200).
        async with self.memories.holding(purging.entry_specs(self.layout, kind, name)):
            names = [name, *(await self._archived_copies(kind, name))]
            texts = [*(await self._texts(kind, names)), *phrases] if scrub_logs else []
            redact.phrases(texts)  # too many: 400 now, before anything is deleted
            specs = purging.entry_specs(self.layout, kind, name) + [
                str(self.layout.relative(self.layout.entry_folder(kind, copy, archived=True)))
                for copy in names[1:]
            ]
            actor = current_actor() or SYSTEM
            progress = purging.Progress(kind.value, name, self.clock.now().isoformat(), history)
            read: Version | None = None if if_match is None else (kind, name, if_match)
            if none_live:
                read = (kind, name, None)
            if self.committer is None:
                removed = await asyncio.to_thread(self.memories.remove_paths, specs, unchanged=read)
                rewritten, commit = 0, None
            else:
                try:
                    removed, rewritten, commit = await self._locked(
                        lambda c: self._purge(c, kind, name, specs, progress, actor, read)
                    )
                finally:
                    self.purging = None
        seconds = round(progress.elapsed_s(), 3)
        dropped = max(0, progress.commits - rewritten) if history else 0
        if not removed and not progress.commits and not phrases:
            where = "live, archived or in history" if history else "live or archived"
            raise NotFound(f"no {kind.value} named {name!r}, {where}")
        scrubbed, failed = await self._scrub(texts)
        done = purging.Purged(
            kind.value, name, removed, history, rewritten, commit, progress.estimated_s,
            seconds, scrubbed, dropped,
        )  # fmt: skip
        why = failed.detail if failed else None
        record = done.record(self.clock.now().isoformat(), scrub_logs, why, actor)
        await asyncio.to_thread(audit, self.layout.root, record)
        await self._reindex(
            [str(self.layout.relative(self.layout.entry_file(kind, name)))]
            + [
                str(self.layout.relative(self.layout.entry_file(kind, copy, archived=True)))
                for copy in (names if kind.archivable else [])
            ]
        )
        if self.forget_deleted is not None:
            try:
                await self.forget_deleted()
            except (StorageError, Unavailable) as exc:  # the purge stands; the copy goes later
                log.warning("purge: the index files may keep a copy until later: %s", exc.detail)
        if failed is not None:
            raise failed
        return done

    async def _scrub(self, texts: list[str]) -> tuple[list[Scrubbed], SomnidError | None]:
        """Scrub ``texts`` from the session logs; a failure is returned, not raised: the
        purge stands, and its audit line says the scrub failed."""
        if not texts or self.scrub_logs is None:
            return [], None
        try:
            return await self.scrub_logs(texts), None
        except SomnidError as exc:
            return [], exc

    async def _texts(self, kind: Kind, names: list[str]) -> list[str]:
        """The entry's description and body, live and archived, its archived copies' too
        (what a scrub looks for)."""
        texts: list[str] = []
        for number, name in enumerate(names):
            for archived in (False, True) if kind.archivable else (False,):
                if number and not archived:
                    continue  # a copy's name is an archive name only
                try:
                    entry = await self.memories.get(kind, name, archived=archived)
                except SomnidError:  # not there, or broken: its phrases may be given instead
                    continue
                texts += [entry.description, entry.body]
        return texts

    async def _archived_copies(self, kind: Kind, name: str) -> list[str]:
        """The archive names of the entry's other archived copies: see
        :func:`purging.archived_copies`."""
        if not kind.archivable:
            return []
        found = await self.memories.scan((kind,), archived=True)
        broken = [report.path for report in self.memories.broken(recheck=False)]
        return purging.archived_copies(self.layout, kind, name, found, broken)

    def _purge(
        self,
        committer: Committer,
        kind: Kind,
        name: str,
        specs: list[str],
        progress: purging.Progress,
        actor: Actor,
        read: Version | None,
    ) -> tuple[list[str], int, str | None]:
        committer.git.check_attached()  # before anything is deleted or rewritten
        if progress.history:
            purging.check_no_foreign_refs(committer.git, specs)
        self.purging, committer.held_long = progress, True
        try:
            with self.memories.hold(specs):  # no entry of that name until history is rewritten
                return self._purge_held(committer, kind, name, specs, progress, actor, read)
        finally:
            committer.held_long = False

    def _purge_held(
        self,
        committer: Committer,
        kind: Kind,
        name: str,
        specs: list[str],
        progress: purging.Progress,
        actor: Actor,
        read: Version | None,
    ) -> tuple[list[str], int, str | None]:
        known = purging.in_history(committer.git, specs)
        purging.committable(committer.git, committer.gone())
        removed = self.memories.remove_paths(specs, unchanged=read)
        if not removed and not (progress.history and known):
            return [], 0, None
        commit = committer.commit_paths(specs, f"Purge {kind.value}/{name}", actor)
        if not (progress.history and purging.in_history(committer.git, specs)):
            return removed, 0, commit
        # The purge's own commit goes with the rest (it changed nothing but the entry), and
        # so do the copies archived again that are no longer on disk.
        gone = purging.copies_in_history(committer.git, self.layout, kind, name)
        specs = [*specs, *(path for path in gone if path not in specs)]
        return removed, purging.rewrite(committer.git, specs, progress, self.gate.pruning), None

    async def _reindex(self, paths: list[str]) -> None:
        """Tell the index the purged files are gone; an index that cannot be reached (a
        PostgreSQL server down) catches up at its next sync: the purge stands either way."""
        for path in paths:
            try:
                await self.memories.notify(None, str(self.layout.root / path))
            except Unavailable as exc:
                log.warning("purge: the index forgets %s at its next sync: %s", path, exc.detail)
