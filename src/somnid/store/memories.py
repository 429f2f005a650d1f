"""The memory store: entries as files, read fresh, written atomically, archived never deleted.

All methods are blocking (plain ``def``); async callers run them in a thread. Writes are
serialised by one lock, so a read-modify-write never loses an update inside this process
(the data-dir lock keeps other processes out). Reads take no lock: every write replaces
a file atomically, so a reader sees the old version or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from somnid.errors import (
    BeingWritten,
    BrokenFile,
    Conflict,
    InvalidInput,
    NotFound,
    PreconditionFailed,
    StorageError,
)
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry, restored_meta
from somnid.memory.kinds import Kind
from somnid.memory.names import check_name, live_name, slugify
from somnid.store import frontmatter
from somnid.store.atomic import (
    FileVersion,
    Superseded,
    fsync_dir,
    move_atomic,
    storage_error,
    version_of,
    write_atomic,
)
from somnid.store.fields import check_fields, render_entry
from somnid.store.kept import kept_folder, note_tops
from somnid.store.layout import Layout
from somnid.store.naming import EntryNames
from somnid.store.own_writes import OwnWrites
from somnid.store.reader import MAX_FILE_BYTES, etag_of
from somnid.store.removal import Version, as_read, remove_entry_paths, set_aside
from somnid.store.safe import check_no_links, present, read_regular

log = logging.getLogger(__name__)

_OPTIMISTIC_ROUNDS = 3
_LOCKED_ROUNDS = 3  # then rounds under the lock, which only a person's saves can spoil


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A mutation rendered off the lock: the file it read, and the bytes to write."""

    kind: Kind
    name: str
    archived: bool
    path: Path
    current: Entry
    target: Path
    data: bytes


class MemoryStore(EntryNames):
    """Entries as files (see :class:`.reader.EntryReader` for reading them), written
    atomically under one lock, archived never deleted."""

    def __init__(self, layout: Layout, clock: Clock) -> None:
        super().__init__(layout, clock)
        self._ours = OwnWrites()
        self._write_lock = threading.RLock()
        self._held: tuple[str, ...] = ()
        note_tops(layout)  # made or found at start: one made again later is a fresh start

    @contextlib.contextmanager
    def hold(self, specs: list[str]) -> Iterator[None]:
        """No write to ``specs`` (paths relative to the data dir) while held (409
        ``purge_running``): a purge holds what it removes until history is rewritten. Holds
        add up; each lets go of its own only (two purges at once kept each other's)."""
        with self._write_lock:
            self._held = (*self._held, *specs)
        try:
            yield
        finally:
            with self._write_lock:
                held = list(self._held)
                for spec in specs:
                    held.remove(spec)
                self._held = tuple(held)

    def _refuse_held(self, path: Path, *, upkeep: bool = False) -> None:
        if not self._held:
            return
        rel = str(self.layout.relative(path))
        if any(rel == spec or rel.startswith(spec.rstrip("/") + "/") for spec in self._held):
            if upkeep:  # a use noted, a score decayed: left alone, as for a person's edit
                raise BeingWritten(f"{rel} is being purged")
            raise Conflict(
                f"{rel} is being purged; write it again once the purge is done",
                code="purge_running",
            )

    # ------------------------------------------------------------------ writing

    def create(self, kind: Kind, name: str, *, meta: dict[str, Any], body: str) -> Entry:
        """Write a new entry; ``name`` is slugified. Conflict if a live entry has that name."""
        slug = slugify(name)
        path = self.layout.entry_file(kind, slug)
        document = frontmatter.Document(frontmatter.new_meta({"name": slug, **meta}), body)
        data = render_entry(document)
        with self._write_lock:
            if present(path) or (os.path.lexists(path.parent) and not path.parent.is_dir()):
                raise Conflict(f"a {kind.value} named {slug!r} exists already", name=slug)
            self._refuse_case_twin(kind, slug)
            try:
                check_no_links(self.layout.root, path)
            except BrokenFile as exc:
                raise Conflict(f"{exc.detail}: not written", name=slug) from None
            fresh = not path.parent.exists()
            try:
                self._write(path, data, exclusive=True)
            except FileExistsError:
                raise Conflict(f"a {kind.value} named {slug!r} exists already", name=slug) from None
            except BaseException:
                if fresh:  # a create that failed (disk full) leaves no empty entry folder
                    with contextlib.suppress(OSError):
                        path.parent.rmdir()
                raise
            return self._load(path, kind, slug, False)

    def create_unnamed(
        self, kind: Kind, choose: Callable[[], str], *, meta: dict[str, Any], body: str
    ) -> Entry:
        """Write a new entry under the name ``choose`` picks while the write lock is held, so
        concurrent creates never pick the same free name."""
        with self._write_lock:
            return self.create(kind, choose(), meta=meta, body=body)

    def mutate(
        self,
        kind: Kind,
        name: str,
        change: Callable[[frontmatter.Document], None],
        *,
        archived: bool = False,
        if_match: str | None = None,
        quiet_s: float = 0.0,
    ) -> Entry:
        """Read an entry fresh, let ``change`` edit its document, write it back atomically.

        ``if_match`` (an etag) refuses the write when the file changed since the caller read
        it. A broken file is never rewritten. The legacy default-user profile is written as
        ``users/default/about_user.md``, the legacy file untouched. ``change`` may be called
        more than once, on a fresh document each time (the file changed meanwhile).

        ``quiet_s`` (upkeep's writes): BeingWritten when the file was modified less than
        that many seconds ago, not by somnid. A person writing it in place (``cat >``) has
        it open: a rename over it took the rest of what they wrote, lost."""
        check_name(name)
        # Parsing and rendering (ruamel, the costly part of a big entry) happen before the
        # lock; under it only the file's bytes are compared with what was parsed. A file
        # changed in between, or saved by a person while the new bytes were written (never
        # replaced: write_atomic's ``expected``), is parsed again; the last rounds hold the lock.
        for round_ in range(_OPTIMISTIC_ROUNDS + _LOCKED_ROUNDS):
            with self._write_lock if round_ >= _OPTIMISTIC_ROUNDS else contextlib.nullcontext():
                prepared = self._prepare(kind, name, change, archived=archived, if_match=if_match)
                with self._write_lock:
                    if quiet_s:  # (a recall's use noted failed the recall: a probe)
                        self._refuse_held(prepared.path, upkeep=True)
                    read = self._unchanged(prepared)
                    with contextlib.suppress(Superseded):
                        if read is not None:
                            return self._commit(prepared, quiet_s, read)
        raise BeingWritten(f"{kind.value} {name!r} kept changing while somnid wrote it; try again")

    def _prepare(
        self,
        kind: Kind,
        name: str,
        change: Callable[[frontmatter.Document], None],
        *,
        archived: bool,
        if_match: str | None,
    ) -> _Prepared:
        """Read the entry, apply ``change``, render the result: no lock taken."""
        path, current, parsed = self._located(kind, name, archived=archived, round_trip=True)
        if if_match is not None and if_match != current.etag:
            raise PreconditionFailed(
                f"{kind.value} {name!r} changed since it was read (etag {current.etag})",
                etag=current.etag,
            )
        meta = frontmatter.as_commented(current.meta)  # the file's BOM, line ends, indents:
        document = replace(parsed, meta=meta, body=current.body)
        change(document)
        target = self.layout.entry_file(kind, name, archived=archived)
        return _Prepared(kind, name, archived, path, current, target, render_entry(document))

    def _unchanged(self, prepared: _Prepared) -> FileVersion | None:
        """The file's version if it still holds the bytes ``prepared`` was made from."""
        path = self._locate(prepared.kind, prepared.name, archived=prepared.archived)
        if path != prepared.path:
            return None
        try:
            data, info = read_regular(self.layout.root, path, MAX_FILE_BYTES)
        except (OSError, BrokenFile):
            return None
        return version_of(info) if etag_of(data) == prepared.current.etag else None

    def _commit(self, prepared: _Prepared, quiet_s: float, read: FileVersion) -> Entry:
        if prepared.target == prepared.path and etag_of(prepared.data) == prepared.current.etag:
            return prepared.current
        if quiet_s and self._ours.changed_lately_by_another(prepared.path, quiet_s):
            raise BeingWritten(f"{prepared.current.path} changed a moment ago; left for later")
        try:  # a person may remove the folder meanwhile: then the entry is gone, not storage
            moved = prepared.target != prepared.path  # a legacy file written beside, say
            expected = None if moved else read
            self._write(prepared.target, prepared.data, make_dirs=moved, expected=expected)
            return self._load(prepared.target, prepared.kind, prepared.name, prepared.archived)
        except FileNotFoundError:  # read back: removed since
            raise self._missing(prepared.kind, prepared.name, prepared.archived) from None
        except StorageError:
            if os.path.isdir(prepared.target.parent):
                raise
            raise self._missing(prepared.kind, prepared.name, prepared.archived) from None

    def update(
        self,
        kind: Kind,
        name: str,
        *,
        description: str | None = None,
        body: str | None = None,
        fields: dict[str, Any] | None = None,
        if_match: str | None = None,
        archived: bool = False,
    ) -> Entry:
        """Set the given parts; a field set to None is removed. Other keys stay as they were."""
        check_fields(fields or {})

        def change(doc: frontmatter.Document) -> None:
            if description is not None:
                doc.meta["description"] = description
            if body is not None:
                doc.body = body
            for key, value in (fields or {}).items():
                if value is None:
                    doc.meta.pop(key, None)
                else:
                    doc.meta[key] = value

        return self.mutate(kind, name, change, archived=archived, if_match=if_match)

    def archive(
        self,
        kind: Kind,
        name: str,
        *,
        reason: str,
        if_match: str | None = None,
        stamp: dict[str, Any] | None = None,
        quiet_s: float = 0.0,
    ) -> Entry:
        """Move a live entry into its kind's archive, under a name no archived copy has;
        ``quiet_s`` as for :meth:`mutate` (a retirement, an expiry)."""
        if not kind.archivable:
            raise InvalidInput(f"{kind.value} entries are not archived")
        check_name(name)
        with self._write_lock:
            path, live, _ = self._located(kind, name, archived=False)  # a broken one stays
            if quiet_s and self._ours.changed_lately_by_another(path, quiet_s):
                raise BeingWritten(f"{live.path} changed a moment ago; left for later")
            if quiet_s:  # a retirement of an entry under a purge: left, as a write is
                self._refuse_held(path, upkeep=True)
            if if_match is not None and if_match != live.etag:
                raise PreconditionFailed(
                    f"{kind.value} {name!r} changed since it was read", etag=live.etag
                )
            target_name = self._free_archive_name(kind, name)
            when = self.clock.now()

            def mark(doc: frontmatter.Document) -> None:
                doc.meta["archived_at"] = when
                doc.meta["archive_reason"] = reason
                if target_name != name:
                    doc.meta["archived_from"] = name  # restore brings it back under it
                for key, value in (stamp or {}).items():
                    doc.meta[key] = value

            return self._move_and_mark(kind, (name, False), (target_name, True), mark)

    def restore(self, kind: Kind, archived_name: str) -> Entry:
        """Bring an archived entry back under its original name; Conflict if that is taken."""
        check_name(archived_name)
        with self._write_lock:
            archived = self.read(kind, archived_name, archived=True)
            live = live_name(archived.meta.get("archived_from"), archived_name)
            if self.exists(kind, live):
                raise Conflict(
                    f"a live {kind.value} named {live!r} exists; archive or rename it first",
                    name=live,
                )
            self._refuse_case_twin(kind, live)
            when = self.clock.now()

            def unmark(doc: frontmatter.Document) -> None:
                doc.meta.pop("archived_at", None)
                doc.meta.pop("archive_reason", None)
                doc.meta.pop("archived_from", None)
                doc.meta["restored_at"] = when
                doc.meta.update(restored_meta(kind, doc.meta, when))

            return self._move_and_mark(kind, (archived_name, True), (live, False), unmark)

    def _move_and_mark(
        self,
        kind: Kind,
        source: tuple[str, bool],
        target: tuple[str, bool],
        change: Callable[[frontmatter.Document], None],
    ) -> Entry:
        """Move an entry's folder (``(name, archived)`` to ``(name, archived)``), then
        stamp its file. All or nothing: when the stamp cannot be written (disk full,
        read-only), the folder goes back, so a failed archive or restore changes nothing."""
        here = self.layout.entry_folder(kind, source[0], archived=source[1])
        there = self.layout.entry_folder(kind, target[0], archived=target[1])
        self._move(here, there)
        try:
            return self.mutate(kind, target[0], change, archived=target[1])
        except BaseException:
            if os.path.lexists(there):  # else a person removed it: nothing to move back
                try:
                    move_atomic(there, here)
                except (OSError, StorageError):
                    log.exception("could not move %s back after a failed stamp", there)
            raise

    def _write(
        self,
        path: Path,
        data: bytes,
        *,
        exclusive: bool = False,
        make_dirs: bool = True,
        mode: int = 0o600,
        expected: FileVersion | None = None,
    ) -> None:
        """write_atomic, telling :attr:`health` how it went."""
        self._refuse_held(path)
        try:
            top = kept_folder(self.layout, path, self.history_holds)
            write_atomic(
                path,
                data,
                exclusive=exclusive,
                make_dirs=make_dirs,
                mode=mode,
                within=top,
                expected=expected,
            )
        except StorageError as exc:
            if make_dirs or os.path.isdir(path.parent):  # else removed by a person
                self.health.failed(exc)
            raise
        self.health.succeeded()
        self._ours.note(path)

    def _move(self, source: Path, target: Path) -> None:
        """Move an entry's folder; an empty one where it goes is taken, one with files is not."""
        self._refuse_held(source)
        self._refuse_held(target)
        with contextlib.suppress(FileNotFoundError, OSError):
            target.rmdir()  # only ever an empty folder
        if os.path.lexists(target):
            raise Conflict(
                f"{self.layout.relative(target)} exists without an entry file in it; "
                "move it away first"
            )
        try:
            within = kept_folder(self.layout, target, self.history_holds)
            move_atomic(source, target, within=within)
        except StorageError as exc:
            self.health.failed(exc)
            raise

    def exclusive(self) -> AbstractContextManager[bool]:
        """The write lock, held by the caller across several writes (sync's merge: no write
        lands between its check of the files and its writes). Re-entrant: put_raw inside."""
        return self._write_lock

    def put_raw(
        self,
        path: Path,
        data: bytes | None,
        *,
        prune_folder: bool = False,
        executable: bool | None = None,
    ) -> None:
        """Put a file of the data dir back as ``data`` (None: remove it; with
        ``prune_folder``, its folder too once empty), as history's revert does: under the
        write lock, so no write of the entry lands half-way, atomically, health told.
        ``executable`` (a skill's script, as git records it); None keeps the file's own."""
        check_no_links(self.layout.root, path)
        with self._write_lock:
            if data is not None:
                if executable is None:
                    with contextlib.suppress(OSError):
                        executable = bool(os.lstat(path).st_mode & 0o100)
                self._write(path, data, mode=0o700 if executable else 0o600)
                return
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                raise storage_error(exc, path) from exc
            if prune_folder:
                with contextlib.suppress(OSError):
                    if not any(path.parent.iterdir()):
                        os.rmdir(path.parent)
                        fsync_dir(path.parent.parent)

    def remove_paths(self, specs: list[str], *, unchanged: Version | None = None) -> list[str]:
        """Delete what exists of ``specs`` (an entry's folder, a profile's file) under the write
        lock; the ones removed. ``unchanged`` (kind, name, etag): only if that live entry has
        that ETag (If-Match; else 412); with no ETag, if none has it (If-None-Match: *)."""
        with self._write_lock:
            if unchanged is not None:
                kind, name, etag = unchanged
                try:
                    live: Entry | None = self._located(kind, name, archived=False)[1]
                except NotFound:
                    live = None
                as_read(live, kind, name, etag)
            return remove_entry_paths(self.layout, specs)

    def set_aside(self, rels: list[str], folder: str) -> list[tuple[str, str]]:
        with self._write_lock:  # store.removal.set_aside
            return set_aside(self.layout, rels, folder)

    def raw(self, path: Path) -> bytes:
        """The bytes of an entry file (absolute path), read as safely as :meth:`read` does.

        Raises BrokenFile (a FIFO, a link, too large) or OSError."""
        return read_regular(self.layout.root, path, MAX_FILE_BYTES)[0]
