"""Sync: the history repository shared with other machines through one git remote.

A round is: record this machine's new purges (:mod:`somnid.sync.purges`); commit what is
pending; fetch the remote's branch; merge it into HEAD (see :mod:`somnid.sync.merging`:
somnid's merge driver for entry files, conflicts kept beside their entry, edits beating
deletes, purges beating edits); put the merged files in place through the store and
reconcile the index; push, fast-forward only (forced only after a purge with history,
with a lease); when the remote moved on meanwhile, fetch and merge again (a few times).
Rounds run one at a time: at start, on the interval, ``sync.push_after_s`` after a write,
before and after each dream, and on ``POST /v1/sync``.

A remote that is down or refuses is never fatal: writes go on (they are local commits),
the status says why, and the next round catches up. The remote's URL is shown and logged
with its password masked (:func:`somnid.sync.remote.redact`).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import functools
import logging
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from somnid.config import SyncSettings
from somnid.errors import Conflict, NotFound, SomnidError, Unavailable
from somnid.history.committer import Committer
from somnid.history.service import History
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.memory.text import shown_path
from somnid.provenance import MERGED, Actor, DreamRecord, acting
from somnid.services.archived_text import as_archived
from somnid.services.memories import MemoryService
from somnid.store.layout import Layout
from somnid.sync import purges
from somnid.sync.merge import DRIVER
from somnid.sync.merged_on import merged_on, places
from somnid.sync.merging import APPLIED, CONFLICT_MARK, MERGED_ON, merge_remote
from somnid.sync.remote import Remote, SyncError, redact

log = logging.getLogger(__name__)

ATTRIBUTES = """\
# Written by somnid (docs/memory-model.md): entry files merge with somnid's own driver.
SKILL.md merge=somnid
INTENT.md merge=somnid
about_user.md merge=somnid
about_me.md merge=somnid
# Purges to carry to the other machines: lines only ever added, by any machine.
purged.jsonl merge=union
"""
PUSH_ROUNDS = 3
"""A push the remote refuses because it moved on is retried after a new fetch and merge."""
MAX_CONFLICT_CHARS = 20_000
STOP_WAIT_S = 10.0
DREAM_POLL_S = 1.0
"""While a dream runs, the loop looks this often whether it has ended (then a round)."""


@dataclass(frozen=True, slots=True)
class SyncConflict:
    path: str
    """The conflict file (relative to the data dir): the other machine's whole version."""
    entry: str
    """The entry file beside it, which kept this machine's version."""
    kind: str | None
    name: str | None
    text: str
    entry_text: str | None = None
    """The entry file's text (this machine's version); None when it is gone."""
    merged_on: str | None = None
    """The machine whose merge kept the entry's text and set this one aside (from that
    commit's message); None when this machine's (or unknown). On another machine the entry
    holds that machine's version and this file the remote's, which may be this one's."""


@dataclass(slots=True)
class SyncStatus:
    enabled: bool
    detail: str | None = None
    remote: str | None = None
    machine: str | None = None
    state: str = "off"
    """off | idle | running | failed"""
    interval_s: float | None = None
    last_pull: str | None = None
    last_push: str | None = None
    last_error: str | None = None
    last_error_at: str | None = None
    ahead: int | None = None
    behind: int | None = None
    changed: int = 0
    """Files the last round's merge changed here."""
    conflicts: list[SyncConflict] = field(default_factory=list)


class SyncService:
    def __init__(
        self,
        settings: SyncSettings,
        layout: Layout,
        memories: MemoryService,
        clock: Clock,
        history: History,
        machine: str,
        dreaming: Callable[[], bool],
    ) -> None:
        self.settings = settings
        self.layout = layout
        self.memories = memories
        self.clock = clock
        self.history = history
        self.machine = machine
        self.dreaming = dreaming
        self.committer: Committer | None = None
        self.remote: Remote | None = None
        self.reason: str | None = "sync.remote is not set"
        self._state = "off"
        self._last_pull: str | None = None
        self._last_push: str | None = None
        self._last_error: str | None = None
        self._last_error_at: str | None = None
        self._changed = 0
        self._since = clock.now()
        self._inflight: asyncio.Future[None] | None = None
        self._applying = False
        self._push_soon: asyncio.TimerHandle | None = None
        self._round = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._merged: dict[tuple[str, str], str] = {}  # (file, named): the machine that merged

    # --- start, stop -------------------------------------------------------------------

    async def start(self) -> None:
        """After history has started (sync needs its repository)."""
        committer = self.history.committer
        if self.settings.remote is None:
            return
        if committer is None:
            self.reason = f"sync needs history, which is off: {self.history.reason}"
            log.warning("sync is off: %s", self.reason)
            return
        remote = Remote(committer.git, self.settings.remote, self.settings.timeout_s)
        command = f"{shlex.quote(sys.executable)} -m somnid.sync.merge %O %A %B %P"

        def register() -> dt.datetime:
            with committer.lock:
                committer.git.register_merge_driver(DRIVER, command, ATTRIBUTES)
                return purges.sync_since(committer.git, self.clock.now())

        self._since = await asyncio.to_thread(register)
        self.committer, self.remote, self.reason, self._state = committer, remote, None, "idle"
        if self.settings.push_after_s > 0:
            self.memories.subscribe(self.entry_changed)
        log.info("sync: with %s every %g s", remote.shown, self.settings.interval_s)
        self._task = asyncio.create_task(self._loop(), name="somnid-sync")

    async def stop(self) -> None:
        """Stop the loop; a round's git in flight gets ``STOP_WAIT_S`` to end (its merge
        holds the committer's lock, which history's stop waits for anyway)."""
        if self._push_soon is not None:
            self._push_soon.cancel()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._inflight is not None and not self._inflight.done():
            with contextlib.suppress(Exception):  # the round says its own failure
                await asyncio.wait_for(asyncio.shield(self._inflight), STOP_WAIT_S)

    async def before_dream(self) -> None:
        """Dreamer hook: pull what other machines learnt before dreaming over it. A remote
        that fails does not hold the dream back (the status says why)."""
        if self.remote is None:
            return
        with contextlib.suppress(SomnidError):
            await self.run(during_dream=True)

    async def after_dream(self, _record: DreamRecord) -> None:
        """Dreamer hook: the dream's commit goes out at once."""
        self._wake.set()

    async def entry_changed(self, _entry: Entry | None, _path: str) -> None:
        """MemoryService listener: a write goes out ``sync.push_after_s`` later (one round
        for the writes of that while; none for the files a round itself puts in place)."""
        if self._applying or self._push_soon is not None:
            return

        def due() -> None:
            self._push_soon = None
            self._wake.set()

        self._push_soon = asyncio.get_running_loop().call_later(self.settings.push_after_s, due)

    async def _loop(self) -> None:
        while True:
            if self.dreaming():  # a dream's writes wait for its commit: then a round
                await asyncio.sleep(DREAM_POLL_S)
                continue
            with contextlib.suppress(SomnidError):
                await self.run()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.settings.interval_s)
            self._wake.clear()

    # --- a round -----------------------------------------------------------------------

    async def run(self, *, during_dream: bool = False) -> SyncStatus:
        """One round now (or wait for the one running). Raises Unavailable when sync is
        off, Conflict while a dream runs (its writes are not committed yet), SyncError
        when the remote could not be reached or refused (also kept in the status)."""
        remote, committer = self.remote, self.committer
        if remote is None or committer is None:
            raise Unavailable(f"sync is off: {self.reason}", code="sync_off")
        if self.dreaming() and not during_dream:
            raise Conflict(
                "a dream is running: its changes go out when it ends", code="dream_running"
            )
        async with self._round:
            self._state = "running"
            changed: list[str] = []  # filled as merges put files in place, even if one fails
            loose: list[str] = []  # of those, the ones no commit holds (history commits them)
            try:
                await committer.flush()
                self._inflight = asyncio.ensure_future(
                    asyncio.to_thread(self._round_blocking, remote, committer, changed, loose)
                )
                await asyncio.shield(self._inflight)
            except SomnidError as exc:
                self._failed(exc.detail)
                if isinstance(exc, SyncError):
                    raise
                raise SyncError(f"sync failed: {exc.detail}") from None
            except Exception as exc:  # never take the daemon down
                self._failed(redact(str(exc)))
                raise SyncError(f"sync failed: {redact(str(exc))}") from None
            else:
                self._state, self._last_error, self._last_error_at = "idle", None, None
                self._changed = len(changed)
            finally:
                if self._state == "running":  # cancelled: the next round says more
                    self._state = "idle"
                await self._reconcile(changed, set(loose))
        return await self.status()

    async def _reconcile(self, changed: list[str], loose: set[str]) -> None:
        """The one reconcile path: the index follows the files a merge put in place. Those
        its commit holds are told as MERGED: history does not note them (the next write's
        commit named them all in its subject); the ``loose`` ones it commits."""
        self._applying = True
        try:
            # A conflict kept loose (beside a file a person is editing) is committed by
            # history, under the merge's name: the other machines read which one it was.
            aside = Actor("sync", f"{MERGED_ON}{self.machine}")
            for path in changed:
                with acting(aside if path in loose else MERGED):
                    await self.memories.notify(None, str(self.layout.root / PurePosixPath(path)))
        finally:
            self._applying = False

    def _failed(self, detail: str) -> None:
        self._state, self._last_error = "failed", redact(detail)
        self._last_error_at = self.clock.now().isoformat()
        log.warning("sync: %s", self._last_error)

    def _round_blocking(
        self, remote: Remote, committer: Committer, changed: list[str], loose: list[str]
    ) -> None:
        with committer.lock:
            committer.git.check_attached()  # the branch is what is shared, never a detached HEAD
            purges.record_local(committer, self.machine, self._since)
        for _ in range(PUSH_ROUNDS):
            theirs = remote.fetch()
            with committer.lock:
                merged = merge_remote(committer, theirs, self.machine, self.history.gate.pruning)
            self._last_pull = self.clock.now().isoformat()
            changed.extend(merged.changed)
            loose.extend(merged.loose)
            if merged.conflicts:
                log.warning("sync: kept %d conflict(s) beside their entry", len(merged.conflicts))
            if merged.head is None or merged.head == theirs:
                return
            if merged.rewritten:
                log.warning("sync: a purge rewrote history: replacing the remote's branch")
            if remote.push(merged.head, replacing=theirs if merged.rewritten else None):
                self._last_push = self.clock.now().isoformat()
                return
        raise SyncError(f"{remote.shown} kept moving on: push again at the next round")

    # --- reading -----------------------------------------------------------------------

    async def status(self) -> SyncStatus:
        if self.remote is None:
            return SyncStatus(False, self.reason, machine=self.machine)
        ahead, behind = await asyncio.to_thread(self._counts)
        return SyncStatus(
            True,
            None,
            remote=self.remote.shown,
            machine=self.machine,
            state=self._state,
            interval_s=self.settings.interval_s,
            last_pull=self._last_pull,
            last_push=self._last_push,
            last_error=self._last_error,
            last_error_at=self._last_error_at,
            ahead=ahead,
            behind=behind,
            changed=self._changed,
            conflicts=await self.conflicts(),
        )

    def _counts(self) -> tuple[int | None, int | None]:
        assert self.remote is not None
        theirs = self.remote.tracking()
        git = self.remote.git
        if not git.has_head():
            return 0, None
        if theirs is None:
            return int(git.text("rev-list", "--count", "HEAD").strip()), 0
        counts = git.text("rev-list", "--left-right", "--count", f"HEAD...{theirs}").split()
        return int(counts[0]), int(counts[1])

    async def conflicts(self) -> list[SyncConflict]:
        return await asyncio.to_thread(self._conflicts)

    def _conflicts(self) -> list[SyncConflict]:
        return [conflict for conflict, _file, _entry in self._found()]

    def _found(self, *, whole: bool = True) -> list[tuple[SyncConflict, Path, Path]]:
        """Each conflict, with its file and its entry's (``whole``: with the texts and the
        merging machine; else only where they are). A name that is no UTF-8 (made by hand,
        or from another system) is shown as ``ls -b`` shows it (``caf\\xe9``), and settled
        by that name."""
        found = []
        for top in APPLIED:
            folder = self.layout.root / top
            if not folder.is_dir():
                continue
            for path in sorted(folder.rglob(f"*{CONFLICT_MARK}*")):
                if not path.is_file() or path.is_symlink():
                    continue
                rel = str(self.layout.relative(path))
                stem, _, rest = path.name.partition(CONFLICT_MARK)
                entry = path.with_name(stem + PurePosixPath(rest).suffix)
                if rest.endswith(".md") and not entry.exists() and path.with_name(stem).exists():
                    entry = path.with_name(stem)  # an older sync's name: Makefile.conflict-…md
                what = self.layout.classify(entry)
                try:
                    text = path.read_text("utf-8", "replace")[:MAX_CONFLICT_CHARS] if whole else ""
                except OSError:
                    continue
                conflict = SyncConflict(
                    shown_path(rel),
                    shown_path(str(self.layout.relative(entry))),
                    what[0].value if what else None,
                    shown_path(what[1]) if what else None,
                    text,
                    _text_of(entry) if whole else None,
                    self._merged_on(path, what, rest) if whole else None,
                )
                found.append((conflict, path, entry))
        return found

    async def resolve(self, path: str, *, take_other: bool = False) -> None:
        """The conflict file at ``path`` is settled: it goes, through the store; history
        keeps it. With ``take_other`` the entry first takes its text (the other machine's
        whole version) in place of this machine's, which history keeps too (what is
        pending is committed before)."""
        if CONFLICT_MARK not in PurePosixPath(path).name:
            raise NotFound(f"no conflict file {path!r}")
        self.memories.check_not_held()  # a person's merge: its --abort would undo this
        found = await asyncio.to_thread(functools.partial(self._found, whole=False))
        known = {c.path: (file, entry) for c, file, entry in found}
        if path not in known:
            raise NotFound(f"no conflict file {path!r}")
        if sum(c.path == path for c, _file, _entry in found) > 1:
            raise Conflict(
                f"two files show as {path!r} (one name is no UTF-8): rename one by hand",
                code="conflict",
            )
        target, entry = known[path]
        if take_other:
            try:
                data = await asyncio.to_thread(target.read_bytes)
            except OSError:
                raise NotFound(f"no conflict file {path!r}") from None
            # A file a person is editing does not parse, so history does not hold it: it is
            # not replaced (BrokenFile: 409 broken_file), as no other write replaces it; an
            # archived entry's file too (read_path reads live entries only).
            await asyncio.to_thread(self.memories.read_path, entry)
            where = self.layout.classify(entry)
            if where is not None and where[2]:
                with contextlib.suppress(NotFound):  # gone: the other's version is all there is
                    kept = await self.memories.get(where[0], where[1], archived=True)
                    data = as_archived(data, kept)  # archived here: it stays archived as it was
            if self.history.committer is not None:
                await self.history.committer.flush()  # this machine's version into history
            await asyncio.to_thread(self.memories.put_raw, entry, data)
            await self.memories.notify(None, str(entry))
        await asyncio.to_thread(self.memories.put_raw, target, None)
        await self.memories.notify(None, str(target))

    def _merged_on(self, path: Path, what: tuple[Kind, str, bool] | None, named: str) -> str | None:
        """The machine of the merge that set ``path`` aside, when another than this one;
        read once a file (the status is asked every few seconds)."""
        if self.remote is None:
            return None
        key = (str(path), named)
        machine = self._merged.get(key)
        if machine is None:  # none found yet (its merge not committed yet) is asked again
            if len(self._merged) > 1000:  # settled ones are not asked again
                self._merged.clear()
            machine = merged_on(self.remote.git, places(self.layout, path, what), named)
            if machine is not None:
                self._merged[key] = machine
        return machine if machine != self.machine else None


def _text_of(path: Path) -> str | None:
    try:
        return path.read_text("utf-8", "replace")[:MAX_CONFLICT_CHARS]
    except OSError:  # gone (or unreadable): the conflict file is all there is
        return None
