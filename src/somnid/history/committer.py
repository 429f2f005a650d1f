"""The background committer: writes become commits a moment later, never before they are
acknowledged, and never on the event loop.

- A write through the services is announced (``entry_changed``, a MemoryService listener)
  with the actor of the request or tool that made it; the writes of one writer (source,
  agent, session) a flush finds become one commit (:func:`~somnid.history.noted.merged`).
  A commit git refuses (a stale lock, a full disk) is kept as those writes, tried again.
- A write with no actor while a dream runs is the dream's: held until the dream's journal
  is written (``dream_finished``), then one commit with a ``Dream-Id`` trailer.
- A change the watcher reports (``watching.follow``) that no write explains is a hand edit: its own
  commit, of the files that parse (a broken or half-saved file waits for its fix).
- At start, what changed while somnid was down (or was left uncommitted) comes first.
- What the index would not read stays out of history: a path that is no regular file (a
  FIFO, a link) or is over 8 MB is never staged, said once in the log (a FIFO made every
  commit fail; a 1 GB file was hashed into every commit).

Git runs in a worker thread, one operation at a time (``lock``), in arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from somnid.history.git import Git, GitError, spare_descriptors
from somnid.history.leftout import LeftOut, unmade_links
from somnid.history.messages import commit_message, dream_message, labels, listing
from somnid.history.noted import Noted, earliest, merged
from somnid.history.pathspecs import ON_COMMAND_LINE, as_tops, with_folders, within
from somnid.history.staging import commit_paths_only, in_head, in_history
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.provenance import DREAM, MERGED, Actor, DreamRecord, current_actor
from somnid.services.memories import MemoryService
from somnid.store.atomic import folder_missing
from somnid.store.layout import FOLDER_FILES, Layout

log = logging.getLogger(__name__)

TRACKED = ("memory", "skills", ".gitignore")
UNTRACKED_PREFIXES = ("memory/session-log/",)
HAND = Actor("hand", "hand edit")
START = Actor("somnid", "somnid start")
SOMNID = Actor("somnid", "somnid")
START_SWEEP_S = 2.0
POLL_S = 0.05  # how often a read that must not wait on a purge looks again
MIN_SPARE_FDS = 24  # a git child and its pipes, with room for the server to accept
RETRY_S = 5.0  # after a commit git refused (a stale index.lock, a full disk)


class Committer:
    def __init__(
        self,
        git: Git,
        layout: Layout,
        memories: MemoryService,
        *,
        window_s: float,
        dreaming: Callable[[], bool],
    ) -> None:
        self.git = git
        self.layout = layout
        self.memories = memories
        self.window_s = window_s
        self.dreaming = dreaming
        self.lock = threading.Lock()  # one git operation at a time (commits, revert, purge)
        self.held_long = False
        """True while a long operation holds :attr:`lock` (a purge's rewrite: minutes on a
        long history); reads then do not wait to commit what is pending."""
        self.commits = 0
        self.last_error: str | None = None
        self.waiting_since: float | None = None  # monotonic: the oldest write not committed
        self._queue: list[Noted] = []
        self._dream: dict[str, None] = {}
        self._hand = False
        self._hand_deferred = False  # set in the worker thread: a write was under way
        self.away: Callable[[Path], bool] = lambda folder: not folder.is_dir()
        """Whether a kept folder is away (the store's reading, set at start)."""
        self._left = LeftOut(layout, memories)  # what history leaves out, and why
        self._journals = layout.relative(layout.dream_log_dir).as_posix() + "/"
        self._wake = asyncio.Event()
        self._order = asyncio.Lock()
        self._caught_up = asyncio.Event()  # the start's commit is made (or failed)
        self._task: asyncio.Task[None] | None = None

    # --- start, stop -------------------------------------------------------------------

    async def start(self) -> None:
        """Open the repository; what changed while somnid was down is committed behind."""
        await asyncio.to_thread(self._open)
        self._task = asyncio.create_task(self._run(), name="somnid-history")

    def _open(self) -> None:
        with self.lock:
            self.git.open()

    def _catch_up(self, exclude: set[str], still: Callable[[], bool]) -> bool:
        with self.lock:
            return self._commit_loose(
                START, "Changes not yet in history when somnid started", exclude, still
            )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._dream:  # a dream cut short by shutdown: its writes are still recorded
            self._queue.append(Noted(DREAM, self._dream))
            self._dream = {}
        await self.flush()

    # --- what the services, the dreamer and the watcher tell ---------------------------

    async def entry_changed(self, entry: Entry | None, path: str) -> None:
        """MemoryService listener: a write is on disk (no I/O here: it is only noted)."""
        rel, actor = self._relative(path), current_actor()
        if rel is None or actor == MERGED:  # a merge's files: its commit holds them
            return
        if self.dreaming() and (actor is None or actor == DREAM):
            self._dream[rel] = None  # the dreamer's task acts as DREAM; others keep theirs
            return
        actor = actor or SOMNID
        self.waiting_since = self.waiting_since or time.monotonic()
        if self._queue and self._queue[-1].actor == actor and self._queue[-1].dream is None:
            self._queue[-1].paths[rel] = None
        else:
            self._queue.append(Noted(actor, {rel: None}))
        self._wake.set()

    async def dream_finished(self, record: DreamRecord) -> None:
        """Dreamer hook, after its journal is written: the dream's writes become one commit."""
        paths = dict(self._dream)  # emptied only once queued: a sweep between sees it still
        if record.journal:
            paths[record.journal] = None
        if not paths:
            return
        info: dict[str, Any] = {
            "trigger": record.trigger,
            "status": record.status,
            "reason": record.reason,
            "created": record.created,
            "updated": record.updated,
            "archived": record.archived,
            "decayed": record.decayed,
            "retired": record.retired,
            "profiles": record.profiles,
            "profiles_refused": record.profiles_refused,
            "processed": list(record.processed),
            "dream_id": PurePosixPath(record.journal).stem if record.journal else None,
        }
        self._queue.append(Noted(DREAM, paths, info))
        self._dream = {}
        self._wake.set()

    def hand_edited(self) -> None:
        self._hand = True
        self._wake.set()

    # --- committing --------------------------------------------------------------------

    async def flush(self, *, wait: bool = True) -> None:
        """Commit everything noted so far, now (before a revert, a purge, a history read).
        ``wait=False`` (a read): waits for a commit under way, never for a long hold of git
        (:attr:`held_long`, a purge's rewrite): then the noted writes wait for the next."""
        if self._task is not None:  # what changed while somnid was down comes first
            await self._caught_up.wait()
        if not wait:
            while self._order.locked():  # a commit under way: seconds at most
                if self.held_long:
                    return
                await asyncio.sleep(POLL_S)
            if self.held_long:
                return
        async with self._order:
            items, self._queue = merged(self._queue), []
            since, self.waiting_since = self.waiting_since, None
            hand, self._hand = self._hand, False
            held = set(self._dream)
            if items or hand:
                done = False
                try:  # ``items`` keeps what is not committed: a purge took git, or git
                    done = await asyncio.to_thread(self._commit, items, hand, held, wait)
                finally:  # refused it (a lock, a full disk): kept, in order, as themselves
                    self._queue[:0] = items
                    if items:  # the oldest of what waits (a dream's has no time)
                        self.waiting_since = earliest(since, self.waiting_since)
                    self._hand = self._hand or (hand and not done)
                if not done:
                    self._wake.set()
                elif self._hand_deferred:  # a write was under way: hand edits next time
                    self._hand_deferred = False
                    self._hand = True
                    self._wake.set()

    async def _run(self) -> None:
        try:
            await self._commit_start()
        finally:
            self._caught_up.set()
        # Hand edits made before the watcher runs (after the index settles): one sweep later.
        asyncio.get_running_loop().call_later(START_SWEEP_S, self.hand_edited)
        while True:
            await self._wake.wait()
            await asyncio.sleep(self.window_s)  # writes within the window: one commit
            spare = spare_descriptors()
            if spare is not None and spare < MIN_SPARE_FDS:
                await asyncio.sleep(1.0)  # a connection flood: commit once it has passed
                continue
            self._wake.clear()
            try:
                await self.flush()
            except Exception as exc:  # never take the daemon down; tried again shortly
                self.last_error = str(exc)
                log.warning("history: could not commit: %s", exc)
                asyncio.get_running_loop().call_later(RETRY_S, self._wake.set)

    async def _commit_start(self) -> None:
        """Commit what changed while somnid was down. What was written since start is left
        to its own commit: the noted writes, and a write under way (its file may be on disk
        before its announcement), which the catch-up waits out."""
        while True:
            async with self._order:
                noted = {path for item in self._queue for path in item.paths} | set(self._dream)
                begun = self.memories.writes_begun
                if not self.memories.writing:
                    try:
                        done = await asyncio.to_thread(self._catch_up, noted, self._quiet(begun))
                    except Exception as exc:
                        self.last_error = str(exc)
                        log.warning("history: could not commit the changes found at start: %s", exc)
                        return
                    if done:
                        return
            await asyncio.sleep(POLL_S)

    def _quiet(self, begun: int) -> Callable[[], bool]:
        """Whether no write of somnid's own began since ``begun`` nor is under way."""
        return lambda: not self.memories.writing and self.memories.writes_begun == begun

    def _commit(self, items: list[Noted], hand: bool, held: set[str], wait: bool = True) -> bool:
        """Commit ``items`` (and the hand edits), each taken from ``items`` once committed (one
        git refuses stays, its paths out of the hand edits, and its refusal is raised after the
        others); False, committing nothing, when ``wait`` is False and git is busy."""
        if wait:
            self.lock.acquire()
        else:
            while not self.lock.acquire(timeout=POLL_S):
                if self.held_long:
                    return False
        refused: list[GitError] = []
        try:
            for item in list(items):
                if any(
                    path in other.paths
                    for other in items[: items.index(item)]
                    for path in item.paths
                ):
                    continue  # after a refused write of the same file: waits behind it
                if item.dream:
                    message = dream_message(item.dream, self._profiles(item.paths))
                else:
                    message = self._write_message(item)
                try:
                    self.commit_paths(list(item.paths), message, item.actor)
                except GitError as exc:
                    refused.append(exc)
                    continue
                items.remove(item)
            if hand:
                self._commit_hand_edits(held | {p for i in items for p in i.paths})
        finally:
            self.lock.release()
        if refused:
            raise refused[0]
        self.last_error = None
        return True

    def _noted(self) -> set[str]:
        """The paths of the writes noted and not yet committed, and the running dream's
        (read from the worker thread: each container copied whole, under the GIL)."""
        noted = set(self._dream.copy())
        for item in self._queue[:]:
            noted.update(item.paths.copy())
        return noted

    def _commit_hand_edits(self, held: set[str]) -> None:
        """The loose changes as hand edits, unless a write of somnid's own was under way
        meanwhile: its file may be on disk before its announcement, and would be taken for
        a hand edit. Then the sweep waits for the next commit (caller holds the lock)."""
        quiet = self._quiet(self.memories.writes_begun)  # taken first: a write noted after
        # the look below began after it, and ``quiet`` says so. What is noted now (not only
        # when this flush began: a dream's write made meanwhile) is its writer's, never a hand's.
        held = held | self._noted()
        if (
            self.gone()  # back later: the sweep waits for it (the folder, or one made anew)
            or self.memories.writing
            or not self._commit_loose(HAND, "Hand edit", held, quiet)
        ):
            self._hand_deferred = True

    def _commit_loose(
        self,
        actor: Actor,
        subject: str,
        exclude: Iterable[str] = (),
        still: Callable[[], bool] = lambda: True,
    ) -> bool:
        """Commit every change git sees that parses (caller holds the lock); False, committing
        nothing, when ``still`` says a write of somnid's own began meanwhile."""
        skip = set(exclude)
        changed = [path for path in self.changed_paths() if path not in skip]
        if actor == HAND:
            # A new dream journal is its dream's: written just before the dream hands it to
            # history (``dream_finished``). One a person edits (in HEAD already) is theirs.
            journals = [p for p in changed if p.startswith(self._journals)]
            if journals:
                new = set(journals) - set(in_head(self.git, journals))
                changed = [path for path in changed if path not in new]
        whole = [
            path for path in changed if not self._left.kept_out(path) and self._left.whole(path)
        ]
        if whole and not still():
            return False
        if whole:
            named = listing(labels(self.layout, whole))
            self._commit_specs(whole, f"{subject}: {named}", actor)
        return True

    def changed_paths(self, specs: Iterable[str] = TRACKED) -> list[str]:
        wanted = list(specs)
        asked = wanted if len(wanted) <= ON_COMMAND_LINE else list(TRACKED)
        out = self.git.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
            "--", *asked,
        )  # fmt: skip
        # A name that is no UTF-8 (made by hand) as Python keeps it: git is given it back.
        records = [record for record in out.split(b"\0") if len(record) > 3]
        found = [os.fsdecode(record[3:]) for record in records]
        gone = [os.fsdecode(record[3:]) for record in records if record[:2] == b" D"]
        self._left.unmade = unmade_links(self.git, gone)
        return found if asked is wanted else within(found, wanted)

    def kept_out(self, rel: str) -> bool:
        """Whether history leaves ``rel`` (a path :meth:`changed_paths` gave) as it is."""
        return self._left.kept_out(rel)

    def commit_paths(self, paths: list[str], message: str, actor: Actor) -> str | None:
        """Stage ``paths`` (an entry file stands for its folder) and commit them alone;
        the new commit's id, or None if nothing changed (caller holds the lock)."""
        return self._commit_specs(self._stageable(paths), message, actor)

    def _commit_specs(self, specs: list[str], message: str, actor: Actor) -> str | None:
        """Commit ``specs`` (each there or tracked); git status's paths are, as they come."""
        if not specs:
            return None
        gone = self.gone()
        if gone is not None:  # a person moved it away: its entries are not deleted
            raise GitError(folder_missing(gone).detail, code="folder_missing")
        # A folder's odd files are excluded by name (git refuses to add a FIFO at all): with
        # pathspec magic on for this one call, every path marked literal.
        every = self.changed_paths() if len(specs) > ON_COMMAND_LINE else None  # one status
        mine = self.changed_paths(specs) if every is None else within(every, specs)
        # An entry file that does not parse (a person broke it within a write's batch) waits
        # for its fix, as a hand edit does; parsed only for a batch's few files.
        few = every is None
        odd = [r for r in mine if self._left.kept_out(r) or (few and not self._left.whole(r))]
        # A folder git lists whole ("memory/knowledge/x/": a repository of its own inside)
        # takes its spec with it: a spec that matches nothing made the commit take nothing.
        left_out = {rel.rstrip("/") for rel in odd}
        specs = [s for s in specs if not any(s == o or s.startswith(o + "/") for o in left_out)]
        if not specs:
            return None
        tops = every is not None and len(specs) > ON_COMMAND_LINE
        if tops and every is not None:
            specs, others = as_tops(specs, every, TRACKED)
            odd += others
        magic: dict[str, str] = {}
        if odd:
            specs = [f":(literal){spec}" for spec in specs]
            specs += [f":(exclude,literal){rel}" for rel in odd]
            magic = {"GIT_LITERAL_PATHSPECS": "0"}
        text, env = commit_message(message, actor)
        if not commit_paths_only(self.git, specs, text, {**magic, **env}, tops=tops):
            return None
        self.commits += 1
        if self.commits % 500 == 1:  # a daemon's first commit, then every 500th (seconds)
            self.git.pack_if_due()
        return self.git.text("rev-parse", "HEAD").strip()

    def gone(self) -> Path | None:
        """memory/, skills/ or a kind's folder if a person moved it away while history keeps
        files of it (in its index or in HEAD): nothing is committed meanwhile (an empty
        one removed holds nothing back)."""
        for folder in self.layout.kept():
            if self.away(folder) and self.holds(folder):
                return folder
        return None

    def holds(self, folder: Path) -> bool:
        """Whether history keeps files under ``folder`` (absolute)."""
        return in_history(self.git, str(self.layout.relative(folder)))

    def _stageable(self, paths: list[str]) -> list[str]:
        specs: dict[str, None] = {}
        for rel in paths:
            if rel.startswith(UNTRACKED_PREFIXES):
                continue
            pure = PurePosixPath(rel)
            specs[str(pure.parent) if pure.name in FOLDER_FILES else rel] = None
        if not specs:
            return []
        asked = list(specs) if len(specs) <= ON_COMMAND_LINE else list(TRACKED)
        tracked = self.git.run("ls-files", "-z", "--", *asked).split(b"\0")
        known = with_folders(os.fsdecode(p) for p in tracked if p)
        found = [spec for spec in specs if spec in known or (self.layout.root / spec).exists()]
        gone = [spec for spec in specs if spec not in found]
        if gone and len(gone) <= ON_COMMAND_LINE:  # its deletion staged already, maybe
            found += in_head(self.git, gone)
        return found

    def _profiles(self, paths: Iterable[str]) -> list[str]:
        """The profiles among ``paths`` that this commit changes (git's word, not the
        dream's count): ``profile/about_me``, ``profile/ann``."""
        wanted = []
        for rel in paths:
            what = self.layout.classify(self.layout.root / rel)
            if what is not None and what[0] is Kind.PROFILE:
                wanted.append(rel)
        return labels(self.layout, self.changed_paths(wanted)) if wanted else []

    def _write_message(self, item: Noted) -> str:
        return f"{listing(item.names, 2)}: {listing(labels(self.layout, item.paths))}"

    def _relative(self, path: str) -> str | None:
        candidate = Path(path)
        if candidate.is_absolute():
            try:
                candidate = candidate.relative_to(self.layout.root)
            except ValueError:
                return None
        return candidate.as_posix()
