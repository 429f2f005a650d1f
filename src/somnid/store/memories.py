"""The memory store: entries as files, read fresh, written atomically, archived never deleted.

All methods are blocking (plain ``def``); async callers run them in a thread. Writes are
serialised by one lock, so a read-modify-write never loses an update inside this process
(the data-dir lock keeps other processes out). Reads take no lock: every write replaces
a file atomically, so a reader sees the old version or the new one, never half of either.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from somnid.errors import (
    BrokenFile,
    Conflict,
    InvalidInput,
    NotFound,
    PreconditionFailed,
    StorageError,
)
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.kinds import SELF_PROFILE, Kind
from somnid.memory.names import check_name, slugify
from somnid.store import frontmatter
from somnid.store.atomic import TEMP_PREFIX, fsync_dir, move_atomic, storage_error, write_atomic
from somnid.store.health import StorageHealth
from somnid.store.layout import ARCHIVED, LEGACY_DEFAULT_USER, Layout
from somnid.store.safe import check_no_links, present, read_regular

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 8 * 1024 * 1024
ARCHIVE_SUFFIX = "--"
_OPTIMISTIC_ROUNDS = 3

# Keys a caller may not set through ``fields``: identity and history belong to somnid.
PROTECTED_KEYS = frozenset({"name", "created"})


@dataclass(frozen=True, slots=True)
class BrokenReport:
    path: str
    reason: str


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


def etag_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def _live_name(recorded: object, archived_name: str) -> str:
    """The name an archived entry had when live: recorded when archiving renamed it, else
    its archived name less the ``--<n>`` a rename adds ("release--v2" stays itself)."""
    if isinstance(recorded, str) and recorded.strip():
        return recorded.strip()
    stem, sep, number = archived_name.rpartition(ARCHIVE_SUFFIX)
    return stem if sep and stem and number.isdigit() else archived_name


class MemoryStore:
    def __init__(self, layout: Layout, clock: Clock) -> None:
        self.layout = layout
        self.clock = clock
        self._write_lock = threading.RLock()
        self._cache: dict[Path, tuple[tuple[int, int, int], Entry]] = {}
        self._broken: dict[str, BrokenReport] = {}
        self._broken_lock = threading.Lock()
        self.health = StorageHealth(layout.root)

    # ------------------------------------------------------------------ reading

    def read(self, kind: Kind, name: str, *, archived: bool = False) -> Entry:
        """One entry, fresh from disk. Raises NotFound or BrokenFile."""
        check_name(name)
        path = self._locate(kind, name, archived=archived)
        if path is None:
            where = "archived " if archived else ""
            raise NotFound(f"no {where}{kind.value} named {name!r}")
        return self._load(path, kind, name, archived)

    def read_path(self, path: Path) -> Entry | None:
        """The live entry stored at ``path`` (absolute), or None if ``path`` is no live entry.

        Raises BrokenFile for a broken one."""
        located = self.layout.classify(path)
        if located is None or located[2]:
            return None
        kind, name, _ = located
        if not present(path):
            return None
        return self._load(path, kind, name, False)

    def exists(self, kind: Kind, name: str, *, archived: bool = False) -> bool:
        return self._locate(kind, name, archived=archived) is not None

    def scan(self, kinds: tuple[Kind, ...] = tuple(Kind), *, archived: bool = False) -> list[Entry]:
        """Every readable entry of ``kinds``, sorted by (kind, name); broken ones are reported."""
        entries: list[Entry] = []
        for kind in kinds:
            for path, name, is_archived in self.files(kind, archived=archived):
                try:
                    entries.append(self._load(path, kind, name, is_archived))
                except BrokenFile:
                    continue
                except FileNotFoundError:
                    continue  # moved away between listing and reading
        return entries

    def broken(self) -> list[BrokenReport]:
        """Files that could not be read, as of the last time each was looked at."""
        with self._broken_lock:
            return sorted(self._broken.values(), key=lambda report: report.path)

    def recheck_broken(self) -> None:
        """Forget reports of files that were fixed or removed since."""
        with self._broken_lock:
            paths = list(self._broken)
        for rel in paths:
            path = self.layout.root / rel
            if not path.exists():
                self._forget_broken(rel)

    def files(self, kind: Kind, *, archived: bool = False) -> Iterator[tuple[Path, str, bool]]:
        if kind is Kind.PROFILE:
            yield from self._profile_files()
            return
        yield from self._folder_entries(self.layout.kind_dir(kind), kind, False)
        if archived:
            yield from self._folder_entries(self.layout.archive_dir(kind), kind, True)

    def count(self, kind: Kind) -> int:
        """How many live entries of ``kind`` there are: the entries ``files`` yields, counted
        without building paths or sorting (health asks on every probe)."""
        if kind is Kind.PROFILE:
            return sum(1 for _ in self._profile_files())
        try:
            children = os.scandir(self.layout.kind_dir(kind))
        except FileNotFoundError:
            return 0
        file_name = self.layout.file_name(kind)
        with children:
            return sum(
                1
                for child in children
                if child.name != ARCHIVED
                and not child.name.startswith(".")
                and child.is_dir(follow_symlinks=False)
                and os.path.isfile(os.path.join(child.path, file_name))
            )

    def _folder_entries(
        self, folder: Path, kind: Kind, archived: bool
    ) -> Iterator[tuple[Path, str, bool]]:
        try:
            children = sorted(os.scandir(folder), key=lambda item: item.name)
        except FileNotFoundError:
            return
        file_name = self.layout.file_name(kind)
        for child in children:
            if child.name == ARCHIVED:
                continue
            if child.is_symlink():
                self._report_broken(
                    str(self.layout.relative(Path(child.path))),
                    "a symbolic link; somnid does not follow links",
                )
                continue
            if not child.is_dir(follow_symlinks=False):
                continue
            if child.name.startswith("."):
                continue
            path = Path(child.path) / file_name
            if present(path):  # a FIFO or a link is yielded, and reported as broken
                yield path, child.name, archived

    def _profile_files(self) -> Iterator[tuple[Path, str, bool]]:
        about_me = self.layout.entry_file(Kind.PROFILE, SELF_PROFILE)
        if present(about_me):
            yield about_me, SELF_PROFILE, False
        seen = set()
        for path, name, _ in self._folder_entries(
            self.layout.kind_dir(Kind.PROFILE), Kind.PROFILE, False
        ):
            seen.add(name)
            yield path, name, False
        legacy = self.layout.legacy_user_profile
        if LEGACY_DEFAULT_USER not in seen and present(legacy):
            yield legacy, LEGACY_DEFAULT_USER, False

    def _locate(self, kind: Kind, name: str, *, archived: bool) -> Path | None:
        if kind is Kind.PROFILE and archived:
            return None
        path = self.layout.entry_file(kind, name, archived=archived)
        if present(path) or os.path.islink(path.parent):
            return path  # a FIFO or a link is found, and reads as broken
        if kind is Kind.PROFILE and name == LEGACY_DEFAULT_USER:
            legacy = self.layout.legacy_user_profile
            return legacy if present(legacy) else None
        return None

    def _load(self, path: Path, kind: Kind, name: str, archived: bool) -> Entry:
        try:
            stat = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            if not os.path.islink(path.parent):
                raise
            stat = os.stat(path.parent, follow_symlinks=False)
        key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        cached = self._cache.get(path)
        if cached is not None and cached[0] == key:
            return cached[1]
        entry = self._parse_file(path, kind, name, archived)
        self._cache[path] = (key, entry)
        return entry

    def _parse_file(
        self, path: Path, kind: Kind, name: str, archived: bool, *, round_trip: bool = False
    ) -> Entry:
        """Read an entry. Reads use the fast reader; ``round_trip`` keeps comments and
        formatting for a document that will be written back."""
        rel = self.layout.relative(path)
        try:
            data, stat = read_regular(self.layout.root, path, MAX_FILE_BYTES)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BrokenFile(f"file is not valid UTF-8 (byte {exc.start})") from exc
            doc = frontmatter.parse(text, round_trip=round_trip)
        except BrokenFile as exc:
            self._report_broken(str(rel), exc.detail)
            raise BrokenFile(f"{rel}: {exc.detail}", path=str(rel)) from None
        self._forget_broken(str(rel))
        return Entry(
            kind=kind,
            name=name,
            archived=archived,
            meta=doc.meta,
            body=doc.body,
            path=rel,
            etag=etag_of(data),
            mtime=stat.st_mtime,
        )

    def _report_broken(self, rel: str, reason: str) -> None:
        with self._broken_lock:
            known = self._broken.get(rel)
            self._broken[rel] = BrokenReport(rel, reason)
        if known is None or known.reason != reason:
            log.warning("leaving broken file alone: %s: %s", rel, reason)

    def _forget_broken(self, rel: str) -> None:
        with self._broken_lock:
            self._broken.pop(rel, None)

    # ------------------------------------------------------------------ writing

    def create(
        self,
        kind: Kind,
        name: str,
        *,
        meta: dict[str, Any],
        body: str,
    ) -> Entry:
        """Write a new entry; ``name`` is slugified. Conflict if a live entry has that name."""
        slug = slugify(name)
        path = self.layout.entry_file(kind, slug)
        document = frontmatter.Document(frontmatter.new_meta({"name": slug, **meta}), body)
        data = _render(document)
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
    ) -> Entry:
        """Read an entry fresh, let ``change`` edit its document, write it back atomically.

        ``if_match`` (an etag) refuses the write when the file changed since the caller read
        it. A broken file is never rewritten. Writing to the legacy default-user profile
        writes ``users/default/about_user.md`` and leaves the legacy file untouched.
        ``change`` may be called more than once, each time on a fresh document: when the
        file changed while the last one was rendered, the last call is what is written.
        """
        check_name(name)
        # Parsing and rendering (ruamel, the costly part of a big entry) happen before the
        # lock; under it only the file's bytes are compared with what was parsed. A file
        # changed in between is parsed again; after a few rounds the lock is held throughout,
        # so a write always ends.
        for _ in range(_OPTIMISTIC_ROUNDS):
            prepared = self._prepare(kind, name, change, archived=archived, if_match=if_match)
            with self._write_lock:
                if self._unchanged(prepared):
                    return self._commit(prepared)
        with self._write_lock:
            prepared = self._prepare(kind, name, change, archived=archived, if_match=if_match)
            return self._commit(prepared)

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
        path = self._locate(kind, name, archived=archived)
        if path is None:
            raise NotFound(f"no {'archived ' if archived else ''}{kind.value} named {name!r}")
        current = self._parse_file(path, kind, name, archived, round_trip=True)
        if if_match is not None and if_match != current.etag:
            raise PreconditionFailed(
                f"{kind.value} {name!r} changed since it was read (etag {current.etag})",
                etag=current.etag,
            )
        document = frontmatter.Document(frontmatter.as_commented(current.meta), current.body)
        change(document)
        target = self.layout.entry_file(kind, name, archived=archived)
        return _Prepared(kind, name, archived, path, current, target, _render(document))

    def _unchanged(self, prepared: _Prepared) -> bool:
        """Whether the file still holds the bytes ``prepared`` was made from (lock held)."""
        path = self._locate(prepared.kind, prepared.name, archived=prepared.archived)
        if path != prepared.path:
            return False
        try:
            return etag_of(self.raw(path)) == prepared.current.etag
        except (OSError, BrokenFile):
            return False

    def _commit(self, prepared: _Prepared) -> Entry:
        if prepared.target == prepared.path and etag_of(prepared.data) == prepared.current.etag:
            return prepared.current
        self._write(prepared.target, prepared.data)
        return self._load(prepared.target, prepared.kind, prepared.name, prepared.archived)

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
    ) -> Entry:
        """Move a live entry into its kind's archive, under a name no archived copy has."""
        if not kind.archivable:
            raise InvalidInput(f"{kind.value} entries are not archived")
        check_name(name)
        with self._write_lock:
            path = self._locate(kind, name, archived=False)
            if path is None:
                raise NotFound(f"no {kind.value} named {name!r}")
            live = self._parse_file(path, kind, name, False)  # a broken file is not moved
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
            live_name = _live_name(archived.meta.get("archived_from"), archived_name)
            if self.exists(kind, live_name):
                raise Conflict(
                    f"a live {kind.value} named {live_name!r} exists; archive or rename it first",
                    name=live_name,
                )
            self._refuse_case_twin(kind, live_name)
            when = self.clock.now()

            def unmark(doc: frontmatter.Document) -> None:
                doc.meta.pop("archived_at", None)
                doc.meta.pop("archive_reason", None)
                doc.meta.pop("archived_from", None)
                doc.meta["restored_at"] = when
                if kind is Kind.INTENTION:
                    doc.meta["status"] = "open"

            return self._move_and_mark(kind, (archived_name, True), (live_name, False), unmark)

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
            try:
                move_atomic(there, here)
            except (OSError, StorageError):
                log.exception("could not move %s back after a failed stamp", there)
            raise

    def _write(self, path: Path, data: bytes, *, exclusive: bool = False) -> None:
        """write_atomic, telling :attr:`health` how it went."""
        try:
            write_atomic(path, data, exclusive=exclusive)
        except StorageError as exc:
            self.health.failed(exc)
            raise
        self.health.succeeded()

    def _move(self, source: Path, target: Path) -> None:
        try:
            move_atomic(source, target)
        except StorageError as exc:
            self.health.failed(exc)
            raise

    def _case_twin(self, kind: Kind, name: str) -> str | None:
        """The live entry whose name differs from ``name`` only in case, if there is one."""
        folded = name.casefold()
        if kind is Kind.PROFILE:
            names = [found for _path, found, _archived in self._profile_files()]
        else:
            try:
                with os.scandir(self.layout.kind_dir(kind)) as children:
                    names = [child.name for child in children if child.name != ARCHIVED]
            except FileNotFoundError:
                return None
        twins = (other for other in names if other != name and other.casefold() == folded)
        return next(twins, None)

    def _refuse_case_twin(self, kind: Kind, name: str) -> None:
        twin = self._case_twin(kind, name)
        if twin is not None:
            raise Conflict(
                f"a {kind.value} named {twin!r} exists; names differing only in case would "
                f"clash on a case-insensitive file system, so {name!r} is refused",
                name=twin,
            )

    def _free_archive_name(self, kind: Kind, name: str) -> str:
        candidate, number = name, 1
        while self.layout.entry_folder(kind, candidate, archived=True).exists():
            number += 1
            candidate = f"{name}{ARCHIVE_SUFFIX}{number}"
        return candidate

    def free_name(self, kind: Kind, base: str) -> str:
        """``base`` or ``base-2``, ``base-3``…: a name neither live nor archived."""
        candidate, number = base, 1
        while (
            self.exists(kind, candidate)
            or self.exists(kind, candidate, archived=True)
            or self._case_twin(kind, candidate) is not None
        ):
            number += 1
            candidate = f"{base}-{number}"
        return candidate

    def next_sequence_name(self, kind: Kind, prefix: str, day: dt.date) -> str:
        """``<prefix>-YYYYMMDD-NNN`` with the first NNN used by no live or archived entry."""
        stem = f"{prefix}-{day:%Y%m%d}-"
        taken: set[str] = set()
        for folder in (self.layout.kind_dir(kind), self.layout.archive_dir(kind)):
            if folder.is_dir():
                taken.update(
                    child.name for child in folder.iterdir() if child.name.startswith(stem)
                )
        number = 1
        while any(
            name == f"{stem}{number:03d}" or name.startswith(f"{stem}{number:03d}{ARCHIVE_SUFFIX}")
            for name in taken
        ):
            number += 1
        return f"{stem}{number:03d}"

    def put_raw(self, path: Path, data: bytes | None, *, prune_folder: bool = False) -> None:
        """Put a file of the data dir back as ``data`` (None: remove it; with
        ``prune_folder``, its folder too once empty), as history's revert does: under the
        write lock, so no write of the entry lands half-way, atomically, health told."""
        check_no_links(self.layout.root, path)
        with self._write_lock:
            if data is not None:
                self._write(path, data)
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

    def raw(self, path: Path) -> bytes:
        """The bytes of an entry file (absolute path), read as safely as :meth:`read` does.

        Raises BrokenFile (a FIFO, a link, too large) or OSError."""
        return read_regular(self.layout.root, path, MAX_FILE_BYTES)[0]

    def leftover_temp_files(self) -> list[Path]:
        return [path for path in self.layout.root.rglob(f"{TEMP_PREFIX}*") if path.is_file()]


def _render(document: frontmatter.Document) -> bytes:
    """The file for ``document``, refused (400) if somnid could not read it back: a write
    never leaves a file that reads as broken (front-matter too large, too many values, or
    text YAML cannot carry, such as a lone surrogate)."""
    try:
        text = frontmatter.render(document)
        frontmatter.parse(text, round_trip=False)
        data = text.encode("utf-8")
    except BrokenFile as exc:
        raise InvalidInput(f"the entry would not be readable: {exc.detail}") from None
    except UnicodeEncodeError:
        raise InvalidInput("the entry holds text that is not valid Unicode") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"the entry would be larger than {MAX_FILE_BYTES} bytes")
    return data


def check_fields(fields: dict[str, Any]) -> None:
    for key in fields:
        if not isinstance(key, str) or not key.strip():
            raise InvalidInput("front-matter keys must be non-empty strings")
        if key in PROTECTED_KEYS:
            raise InvalidInput(f"front-matter key {key!r} is managed by somnid and cannot be set")
    values, chars = _extent(fields)
    # Both are lower bounds of what rendering would make: a refusal here is one the reader
    # would give anyway, only without seconds of YAML rendering first.
    if values > frontmatter.MAX_NODES:
        raise InvalidInput(
            f"the fields hold {values} values; front-matter holds at most {frontmatter.MAX_NODES}"
        )
    if chars > frontmatter.MAX_FRONT_MATTER_CHARS:
        raise InvalidInput(
            f"the fields take at least {chars} characters; front-matter holds at most "
            f"{frontmatter.MAX_FRONT_MATTER_CHARS}"
        )


def _extent(value: Any) -> tuple[int, int]:
    """How many values ``value`` holds and how many characters they take at least."""
    if isinstance(value, dict):
        values, chars = 1, 0
        for key, item in value.items():
            more, text = _extent(item)
            values, chars = values + more, chars + text + len(str(key))
        return values, chars
    if isinstance(value, list | tuple):
        values, chars = 1, 0
        for item in value:
            more, text = _extent(item)
            values, chars = values + more, chars + text
        return values, chars
    return 1, 0 if value is None else len(str(value))
