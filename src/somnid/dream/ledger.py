"""What one dream did, as its tools did it: the facts its journal is written from.

One ledger per dream. The tools add to it as they change memory; the dream loop reads it to
write the journal (even when the dream was interrupted, the ledger holds what was done up
to that point). Each entry is recorded once, under the first thing that happened to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from somnid.dream.profile_gate import Refusal
from somnid.memory.kinds import Kind
from somnid.services.maintenance import DecayReport
from somnid.services.quoting import inline


class ItemRef(NamedTuple):
    """An entry the dream touched: its kind, its name and its file (relative to the data
    dir). For an archived entry, ``name`` is the name it had and ``path`` where it went."""

    kind: Kind
    name: str
    path: str


@dataclass(slots=True)
class LogReading:
    """How much of a session log the dream has read: pages seen out of ``pages``."""

    pages: int
    seen: set[int] = field(default_factory=set)
    user: str | None = None
    """The log's ``user`` (its front-matter), the one user a profile may be written for."""

    @property
    def missing(self) -> list[int]:
        return [page for page in range(1, self.pages + 1) if page not in self.seen]


@dataclass(slots=True)
class Ledger:
    created: list[ItemRef] = field(default_factory=list)
    updated: list[ItemRef] = field(default_factory=list)
    archived: list[ItemRef] = field(default_factory=list)
    processed_logs: list[str] = field(default_factory=list)
    """Stems of the session logs marked processed, in order."""
    left_logs: set[str] = field(default_factory=set)
    """Logs the tools told the model to leave (open again, moved, never to be dreamed,
    processed elsewhere): a dream does not insist on them."""
    profiles: list[str] = field(default_factory=list)
    """Profiles written, as ``about_me (memory/about_me.md)`` or ``user <id> (<path>)``."""
    decay: DecayReport | None = None
    notes: list[str] = field(default_factory=list)
    """The dreamer's own notes (``write_dream_log``), in the order given."""
    reads: dict[str, LogReading] = field(default_factory=dict)
    """Session logs read in this dream, by stem."""
    episodes: list[tuple[str, str]] = field(default_factory=list)
    """(source log, what) of the episodes recorded in this dream, to refuse a repeat."""
    refused_profiles: list[str] = field(default_factory=list)
    """Profile lines the identity gate refused (somnid.dream.profile_gate), for review."""
    unreadable: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Logs that hold no turn somnid can read, by stem: (ctime_ns, size) as they were then.
    Later dreams pass them by until a person changes them."""
    failed: dict[str, str] = field(default_factory=dict)
    """Logs the model refused (a filter on their words) or answered unusably even after a
    repair, by stem, with why: passed by once they failed so in several dreams that
    consolidated other logs (somnid.dream.passed_by)."""
    unchanged_profiles: set[str] = field(default_factory=set)
    """Profiles whose last change the gate refused whole: not listed as written."""

    def add_created(self, ref: ItemRef) -> None:
        if ref not in self.created:
            self.created.append(ref)

    def add_updated(self, ref: ItemRef) -> None:
        """An update of an entry this dream created or updated already is not listed again."""
        if any(seen[:2] == ref[:2] for seen in (*self.created, *self.updated)):
            return
        self.updated.append(ref)

    def add_archived(self, ref: ItemRef) -> None:
        self.archived.append(ref)

    def add_profile(self, line: str) -> None:
        for path in list(self.unchanged_profiles):
            if line.endswith(f"({path})"):  # the gate refused that write: nothing changed
                self.unchanged_profiles.discard(path)
                return
        if line not in self.profiles:
            self.profiles.append(line)

    def add_refused_profile(
        self, name: str, path: str, refusals: list[Refusal], changed: bool
    ) -> None:
        # Quoted: the journal is read by later dreams, and the line may be an attack.
        self.refused_profiles.extend(f"{name}: {inline(r.line)} ({r.why})" for r in refusals)
        if not changed:
            self.unchanged_profiles.add(path)

    def add_left(self, stem: str) -> None:
        self.left_logs.add(stem)

    def unfinished(self, logs: list[str]) -> list[str]:
        """The logs of ``logs`` still to be processed: neither processed nor left."""
        return [log for log in logs if log not in self.processed_logs and log not in self.left_logs]

    def add_processed(self, stem: str) -> None:
        if stem not in self.processed_logs:
            self.processed_logs.append(stem)

    def add_read(self, stem: str, page: int, pages: int, *, user: str | None = None) -> LogReading:
        reading = self.reads.get(stem)
        if reading is None or reading.pages != pages:
            reading = self.reads[stem] = LogReading(pages)
        reading.seen.add(page)
        reading.user = user
        return reading

    def users(self) -> list[str]:
        """The users of the logs read in this dream (``default`` for a log naming none)."""
        found = {reading.user or "default" for reading in self.reads.values()}
        return sorted(found)
