"""One reconcile path keeps the index equal to the files: at start-up, after every write
through the API, and after hand edits the watcher sees.

A file is compared by the hash of its bytes (never its mtime); only a changed file is parsed
again, and only changed text is re-embedded. An index made by an older reading of the files
(:data:`READING`: how dates, questions and text are read from them) is read again whole at
the next full sync, its vectors kept by content: a better reading reaches old entries too.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from dataclasses import dataclass
from pathlib import Path

from somnid.errors import BrokenFile, IndexUnavailable, StorageError
from somnid.memory.clock import Clock, to_datetime
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.recall.backend import INDEXED_KINDS, Document, IndexBackend
from somnid.recall.dates import memory_dates
from somnid.recall.text import asks_question, indexed_text, related_names
from somnid.store.memories import MemoryStore
from somnid.store.reader import etag_of

log = logging.getLogger(__name__)

SYNC_BATCH = 256  # entries per index transaction during a full sync
READING = "2026-12-06.3"
"""The reading of files into index rows (dates, questions, text): changed whenever a release
reads the same file into a different row, so that every row is derived again once
(quarters, halves and days of a month alone, 2026-12-06.2; ``Q1 of the survey`` no
quarter, .3)."""
READING_KEY = "reading"


@dataclass(slots=True)
class SyncReport:
    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    broken: int = 0


def session_of(entry: Entry) -> str | None:
    """What ties an episode to the others of its conversation: the log it came from, else
    its exact ``when`` (the turns of one session share it)."""
    if entry.kind is not Kind.EPISODE:
        return None
    for key in ("session", "source", "when"):
        value = entry.text_field(key).strip()
        if value:
            return f"{key}:{value}"
    return None


def document_of(entry: Entry, tz: dt.tzinfo) -> Document:
    project = entry.field("project")
    when = to_datetime(entry.field("when"), tz) if entry.kind is Kind.EPISODE else None
    day = when.astimezone(tz).date() if when is not None else None
    dates = memory_dates(entry.body, day)
    if day is not None:
        dates.insert(0, (day.toordinal(), day.toordinal()))
    return Document(
        path=str(entry.path),
        kind=entry.kind,
        name=entry.name,
        file_hash=entry.etag,
        text=indexed_text(entry),
        score=entry.vitals(tz).score,
        project=None if project in (None, "") else str(project),
        related=tuple(related_names(entry)),
        session=session_of(entry),
        day=None if day is None else day.toordinal(),
        asks=asks_question(entry.body),
        dates=tuple(dict.fromkeys(dates)),
    )


class Reconciler:
    def __init__(self, store: MemoryStore, index: IndexBackend, clock: Clock) -> None:
        self.store = store
        self.index = index
        self.clock = clock
        # One change to the index at a time: a full sync's batch read before a write's own
        # reconcile must not land after it (a probe: the older text overwrote the newer
        # row, or brought an archived entry's row back, until the next full sync).
        self._lock = threading.RLock()

    def _apply(self, entry: Entry) -> bool:
        """Upsert one entry; True if its searchable text changed."""
        return any(self._apply_many([entry]))

    def _apply_many(self, entries: list[Entry]) -> list[bool]:
        """Upsert entries; an entry somnid cannot make out (logged) is left out of recall:
        one such file must not stop a sync of all the others."""
        docs = []
        for entry in entries:
            try:
                docs.append(document_of(entry, self.clock.tz))
            except Exception:
                log.exception("could not index %s; it stays out of recall", entry.path)
                self.index.delete(str(entry.path))
        return [changed for _, changed in self.index.upsert_many(docs)]

    def _apply_as_read(self, batch: list[Entry]) -> None:
        """Upsert entries a full sync read, those whose file is still as it was read; the
        rest (written, moved or archived since) as their file is now."""
        root = self.store.layout.root
        with self._lock:
            fresh: list[Entry] = []
            changed: list[Entry] = []
            for entry in batch:
                try:
                    same = etag_of(self.store.raw(root / entry.path)) == entry.etag
                except (OSError, BrokenFile):
                    same = False
                (fresh if same else changed).append(entry)
            self._apply_many(fresh)
            for entry in changed:
                self._path(root / entry.path)

    def _drop_unused_vectors(self) -> None:
        """Vectors no entry's text uses any more (an edit's, a deletion's), dropped at the
        end of a full sync, not as they come: an entry archived and restored, a folder moved
        away and back, would be embedded again. Housekeeping: its failure is said only."""
        try:
            dropped = self.index.drop_unused_vectors()
        except (StorageError, IndexUnavailable) as exc:
            log.warning("index: unused vectors not dropped: %s", exc)
            return
        if dropped:
            log.info("index: %d vectors no entry uses dropped", dropped)

    def path(self, path: Path) -> bool:
        """Bring the index in line with one file (absolute path), whatever happened to it.
        True if searchable text changed (or appeared): only then may a text wait for its
        vector. A rewrite of the front matter alone (a decay pass's score) says False."""
        with self._lock:
            return self._path(path)

    def _path(self, path: Path) -> bool:
        rel = str(self.store.layout.relative(path))
        row = self.index.row_by_path(rel)
        if row is not None:
            try:  # never path.read_bytes(): a FIFO there would block the watcher for good
                if etag_of(self.store.raw(path)) == row.file_hash:
                    return False
            except (OSError, BrokenFile):
                pass
        try:
            entry = self.store.read_path(path, nameable=True)
        except BrokenFile:
            entry = None  # a broken file is reported by the store and not searchable
        except FileNotFoundError:
            entry = None
        if entry is None or entry.kind not in INDEXED_KINDS:
            self.index.delete(rel)
            return False
        return self._apply(entry)

    def folder(self, folder: Path) -> bool:
        """Reconcile whatever is (or was) inside ``folder``: after a folder move or removal.
        True if searchable text changed in it (as :meth:`path`)."""
        root = self.store.layout.root
        try:
            prefix = str(self.store.layout.relative(folder))
        except ValueError:
            return False
        if prefix in (".", ""):
            self.full()
            return True
        changed = False
        with self._lock:
            for row in self.index.rows_under(prefix + "/"):
                changed |= self._path(root / row.path)
            if folder.is_dir():
                for path in sorted(folder.rglob("*.md")):
                    if self.store.layout.classify(path) is not None:
                        changed |= self._path(path)
        return changed

    def full(self) -> SyncReport:
        """Compare every live entry file with the index by hash; fix what differs. Every
        file, when the index was derived by another reading of them (:data:`READING`)."""
        # Each row is derived again in place, batch by batch: recall keeps answering from the
        # rows meanwhile (emptying the index first left keyword search blank until the end);
        # an unchanged text keeps its vector.
        reread = self.index.get_state(READING_KEY) != READING
        report = SyncReport()
        known = {row.path: row for row in self.index.rows()}
        seen: set[str] = set()
        batch: list[Entry] = []
        for kind in INDEXED_KINDS:
            for path, _name, _archived in self.store.files(kind):
                report.scanned += 1
                rel = str(self.store.layout.relative(path))
                seen.add(rel)
                row = known.get(rel)
                if row is not None and not reread:  # a new file is read once, below
                    try:
                        file_hash = etag_of(self.store.raw(path))
                    except OSError:
                        continue
                    except BrokenFile:
                        file_hash = ""  # read_path below reports it
                    if row.file_hash == file_hash:
                        report.unchanged += 1
                        continue
                try:
                    entry = self.store.read_path(path, nameable=True)
                except (BrokenFile, FileNotFoundError):
                    report.broken += 1
                    if row is not None:
                        self.index.delete(rel)
                    continue
                except OSError:  # unreadable (its mode): left as it is, as before
                    continue
                if entry is None:
                    continue
                batch.append(entry)
                if row is None:
                    report.added += 1
                else:
                    report.updated += 1
                if len(batch) >= SYNC_BATCH:
                    self._apply_as_read(batch)
                    batch.clear()
        if batch:
            self._apply_as_read(batch)
        with self._lock:
            for rel in set(known) - seen:
                if self.store.layout.root.joinpath(rel).exists():  # made again meanwhile
                    self._path(self.store.layout.root / rel)
                    continue
                self.index.delete(rel)
                report.removed += 1
        self._drop_unused_vectors()
        self.index.stamp_sync(self.clock.now())
        if reread:
            self.index.set_state(READING_KEY, READING)
        return report
