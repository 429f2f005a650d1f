"""The store's reading half: entries read fresh from disk (a cache keyed by the file's
identity), listed by kind, and broken files reported, never repaired or deleted.

:class:`somnid.store.memories.MemoryStore` is a reader with the writes on top. Reads take no
lock: every write replaces a file atomically, so a reader sees the old version or the new
one, never half of either.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from somnid.errors import BrokenFile, FolderAway, InvalidName, NotFound, SomnidError
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.kinds import SELF_PROFILE, Kind
from somnid.memory.names import check_name
from somnid.memory.text import shown_path
from somnid.store import frontmatter, kept
from somnid.store.atomic import folder_missing
from somnid.store.counts import FolderCounts
from somnid.store.health import StorageHealth
from somnid.store.layout import ARCHIVED, FOLDER_FILES, LEGACY_DEFAULT_USER, Layout
from somnid.store.safe import enterable, present, read_regular, shut

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 8 * 1024 * 1024
# Parsed entries kept, the most recently read: ~2.7 KB each (measured on generated entries),
# so all 100k of a large store held 250 MB after the first sync, which reads every file.
ENTRIES_KEPT = 20_000


@dataclass(frozen=True, slots=True)
class BrokenReport:
    path: str
    reason: str


def etag_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


class EntryReader:
    def __init__(self, layout: Layout, clock: Clock) -> None:
        self.layout = layout
        self.clock = clock
        self._cache: OrderedDict[Path, tuple[tuple[int, int, int, int], Entry]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self.entries_kept = ENTRIES_KEPT
        self._broken: dict[str, BrokenReport] = {}
        self._broken_lock = threading.Lock()
        self.history_holds: Callable[[Path], bool] = lambda folder: False  # set by history
        self.health = StorageHealth(layout.root, layout.kept(), self.away)
        self._counts = FolderCounts()

    def read(self, kind: Kind, name: str, *, archived: bool = False) -> Entry:
        """One entry, fresh from disk. Raises NotFound or BrokenFile."""
        check_name(name)
        path = self._locate(kind, name, archived=archived)
        if path is None:
            raise self._missing(kind, name, archived)
        try:
            return self._load(path, kind, name, archived)
        except FileNotFoundError:  # archived, restored or deleted since it was found
            raise self._missing(kind, name, archived) from None

    def read_path(self, path: Path, *, nameable: bool = False) -> Entry | None:
        """The live entry stored at ``path`` (absolute), or None if ``path`` is no live entry.

        Raises BrokenFile for a broken one; with ``nameable`` (the index's reading: what a
        search finds, a request must be able to name) for one in a folder made by hand whose
        name no request can give. History and sync keep such a file like any other."""
        located = self.layout.classify(path)
        if located is None or located[2]:
            return None
        kind, name, _ = located
        if not present(path):
            return None
        if nameable and (why := _unusable(name)) is not None:
            self._report_broken(str(self.layout.relative(path)), why)
            raise BrokenFile(f"{self.layout.relative(path)}: {why}")
        try:
            return self._load(path, kind, name, False)
        except FileNotFoundError:  # moved away since
            return None

    def copies_archived_from(self, kind: Kind, name: str) -> list[str]:
        """The archive names of ``name``'s copies archived under another name (``name--2``
        …, saying ``archived_from: name``); a copy that does not parse is not one."""
        if not kind.archivable:
            return []
        found = []
        for folder in sorted(self.layout.archive_dir(kind).glob(f"{glob.escape(name)}--*")):
            with contextlib.suppress(OSError, SomnidError):
                entry = self.read(kind, folder.name, archived=True)
                if entry.text_field("archived_from") == name:
                    found.append(folder.name)
        return found

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
            try:
                os.lstat(self.layout.root / rel)
            except (FileNotFoundError, NotADirectoryError):
                self._forget_broken(rel)
            except OSError:
                pass  # there, and still not readable

    def files(self, kind: Kind, *, archived: bool = False) -> Iterator[tuple[Path, str, bool]]:
        if kind is Kind.PROFILE:
            yield from self._profile_files()
            return
        yield from self._folder_entries(self.layout.kind_dir(kind), kind, False)
        if archived:
            yield from self._folder_entries(self.layout.archive_dir(kind), kind, True)

    def count(self, kind: Kind) -> int:
        """How many live entries of ``kind`` there are: the entries ``files`` yields, counted
        without building paths or sorting, and kept while the kind's folder is unchanged
        (health asks on every probe; :mod:`somnid.store.counts` says how long a count holds)."""
        if kind is Kind.PROFILE:
            return sum(1 for _ in self._profile_files())
        folder = self.layout.kind_dir(kind)
        return self._counts.get(folder, lambda: self._count_in(folder, kind))

    def _count_in(self, folder: Path, kind: Kind) -> int:
        try:
            children = os.scandir(folder)
        except FileNotFoundError:
            return 0
        except NotADirectoryError:
            self._not_a_folder(folder)
            return 0
        except PermissionError:
            self._unreadable_folder(folder)
            return 0
        if not enterable(folder):
            children.close()
            self._unreadable_folder(folder)
            return 0
        self._a_folder(folder)
        file_name = self.layout.file_name(kind)
        with children:
            return sum(
                1
                for child in children
                if child.name != ARCHIVED
                and not child.name.startswith(".")
                and child.is_dir(follow_symlinks=False)
                and os.path.isfile(os.path.join(child.path, file_name))
                and _unusable(child.name) is None  # as files() yields them
            )

    def _folder_entries(
        self, folder: Path, kind: Kind, archived: bool
    ) -> Iterator[tuple[Path, str, bool]]:
        try:
            children = sorted(os.scandir(folder), key=lambda item: item.name)
        except FileNotFoundError:
            return
        except NotADirectoryError:
            self._not_a_folder(folder)
            return
        except PermissionError:
            self._unreadable_folder(folder)
            return
        if not enterable(folder):  # its names may be read, and nothing of them
            self._unreadable_folder(folder)
            return
        self._a_folder(folder)
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
            if (why := _unusable(child.name)) is not None:  # made by hand: `my notes`, `CON`
                if present(path):
                    self._report_broken(str(self.layout.relative(path)), why)
                continue
            if present(path) or shut(child.path):  # yielded, and reported as broken
                yield path, child.name, archived
            else:
                self._stray(Path(child.path), kind, file_name)

    def _stray(self, folder: Path, kind: Kind, expected: str) -> None:
        """An entry folder moved by hand under another kind holds that kind's file: no
        listing read it, so the entry vanished from recall without a word. Reported."""
        for other in FOLDER_FILES - {expected}:
            if present(found := folder / other):
                self._report_broken(
                    str(self.layout.relative(found)),
                    f"a {kind.value} entry's file is {expected}, not {other}: moved here from "
                    f"another kind? Move the folder back, or rename the file to {expected}",
                )

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

    def _located(
        self, kind: Kind, name: str, *, archived: bool, round_trip: bool = False
    ) -> tuple[Path, Entry, frontmatter.Document]:
        """Find and parse an entry for a change (its document too, as the file holds it);
        NotFound when it is not there, or moved away (archived, restored, deleted by hand)
        between the two."""
        path = self._locate(kind, name, archived=archived)
        if path is None:
            raise self._missing(kind, name, archived)
        try:
            return path, *self._read_entry(path, kind, name, archived, round_trip=round_trip)
        except FileNotFoundError:
            raise self._missing(kind, name, archived) from None

    def _locate(self, kind: Kind, name: str, *, archived: bool) -> Path | None:
        if kind is Kind.PROFILE and archived:
            return None
        path = self.layout.entry_file(kind, name, archived=archived)
        if present(path) or os.path.islink(path.parent) or shut(path.parent):
            return path  # a FIFO or a link is found, and reads as broken
        if kind is Kind.PROFILE and name == LEGACY_DEFAULT_USER:
            legacy = self.layout.legacy_user_profile
            return legacy if present(legacy) else None
        return None

    def _load(self, path: Path, kind: Kind, name: str, archived: bool) -> Entry:
        try:
            if _folders_linked(path):  # swapped for a link since it was read: not from cache
                return self._parse_file(path, kind, name, archived)  # reports it broken
            info = os.stat(path, follow_symlinks=False)
        except PermissionError:
            return self._parse_file(path, kind, name, archived)  # reports why it is broken
        # ctime: a hand edit that puts the mtime back (touch -r, rsync -t, cp -p) moves it
        key = (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
        with self._cache_lock:
            cached = self._cache.get(path)
            if cached is not None and cached[0] == key:
                self._cache.move_to_end(path)
                entry = cached[1]
            else:
                entry = None
        if entry is not None:
            # Read whole before, unchanged, and reached without a link now (in a folder
            # whose name is usable: one that is not stays broken, whoever reads it).
            if self._broken and _unusable(name) is None:
                self._forget_broken(str(self.layout.relative(path)))
            return entry
        entry = self._parse_file(path, kind, name, archived)
        with self._cache_lock:
            self._cache[path] = (key, entry)
            self._cache.move_to_end(path)
            while len(self._cache) > self.entries_kept:
                self._cache.popitem(last=False)
        return entry

    def _parse_file(
        self, path: Path, kind: Kind, name: str, archived: bool, *, round_trip: bool = False
    ) -> Entry:
        """Read an entry. Reads use the fast reader; ``round_trip`` keeps comments and
        formatting for a document that will be written back."""
        return self._read_entry(path, kind, name, archived, round_trip=round_trip)[0]

    def _read_entry(
        self, path: Path, kind: Kind, name: str, archived: bool, *, round_trip: bool = False
    ) -> tuple[Entry, frontmatter.Document]:
        rel = self.layout.relative(path)
        try:
            data, info = read_regular(self.layout.root, path, MAX_FILE_BYTES)
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise BrokenFile(f"file is not valid UTF-8 (byte {exc.start})") from exc
            if not text.strip():  # a write over it would take what is still being typed
                raise BrokenFile("file is empty: being written in place, or emptied by hand")
            doc = frontmatter.parse(text, round_trip=round_trip)
        except BrokenFile as exc:
            self._report_broken(str(rel), exc.detail)
            raise BrokenFile(f"{rel}: {exc.detail}", path=str(rel)) from None
        if _unusable(name) is None:  # a file read whole, in a folder whose name is unusable,
            self._forget_broken(str(rel))  # is still broken (read by its path: the index)
        entry = Entry(
            kind=kind,
            name=name,
            archived=archived,
            meta=doc.meta,
            body=doc.body,
            path=rel,
            etag=etag_of(data),
            mtime=info.st_mtime,
        )
        return entry, doc

    def _missing(self, kind: Kind, name: str, archived: bool) -> NotFound:
        """NotFound; FolderAway when memory/, skills/ or the kind's folder was moved away
        while somnid runs: the entry is not known to be gone (a client must not read it so)."""
        away = kept.away(self.layout, self.layout.kind_dir(kind), self.history_holds)
        if away is not None:
            return FolderAway(folder_missing(away).detail)
        return gone(kind, name, archived)

    def away(self, folder: Path) -> bool:
        """Whether kept ``folder`` was moved away (:mod:`somnid.store.kept`)."""
        return kept.moved_away(self.layout, folder, self.history_holds)

    def _a_folder(self, folder: Path) -> None:
        """A folder where a file was reported: put back by a person, no longer broken."""
        if self._broken:
            self._forget_broken(str(self.layout.relative(folder)))

    def _not_a_folder(self, folder: Path) -> None:
        self._report_broken(
            str(self.layout.relative(folder)), "a file where somnid keeps a folder of entries"
        )

    def _unreadable_folder(self, folder: Path) -> None:
        self._report_broken(str(self.layout.relative(folder)), "a folder somnid may not read")

    def _report_broken(self, rel: str, reason: str) -> None:
        with self._broken_lock:
            known = self._broken.get(rel)
            # Kept under its name as the disk has it; shown as UTF-8 carries it (a name that
            # is no UTF-8 failed every answer that listed it).
            self._broken[rel] = BrokenReport(shown_path(rel), shown_path(reason))
        if known is None or known.reason != shown_path(reason):
            log.warning("leaving broken file alone: %s: %s", shown_path(rel), shown_path(reason))

    def _forget_broken(self, rel: str) -> None:
        with self._broken_lock:
            self._broken.pop(rel, None)


def _unusable(name: str) -> str | None:
    """Why a folder made by hand cannot be an entry's (no request could name it), if so."""
    try:
        check_name(name)
    except InvalidName as exc:
        return f"its folder's name is none somnid can use ({exc.detail}): rename the folder"
    return None


def _folders_linked(path: Path) -> bool:
    """Whether the entry's folder, or the one holding it, is a link: two ``lstat`` calls
    (5 µs in all; the whole walk from the data dir took 16 µs a read, 1.6 s a scan at 100k)."""
    folder = os.path.dirname(path)
    return any(stat.S_ISLNK(os.lstat(p).st_mode) for p in (folder, os.path.dirname(folder)))


def gone(kind: Kind, name: str, archived: bool) -> NotFound:
    """The error for an entry that is not there (any more)."""
    return NotFound(f"no {'archived ' if archived else ''}{kind.value} named {name!r}")
