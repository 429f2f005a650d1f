"""Choosing and checking entry names against what is on disk: names that differ only in
case or Unicode form, a free name for an archived copy, a generated name, a day's next
sequence number. The store's writes use these under their lock."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from somnid.errors import BrokenFile, Conflict
from somnid.memory.kinds import Kind
from somnid.memory.names import ARCHIVE_SUFFIX, folded
from somnid.store.layout import ARCHIVED
from somnid.store.reader import EntryReader


class EntryNames(EntryReader):
    def _case_twin(self, kind: Kind, name: str) -> str | None:
        """The live entry whose name differs from ``name`` only in case or in Unicode form
        (``Résumé`` composed, as somnid writes it, or decomposed, as macOS does), if any."""
        key = folded(name)
        if kind is Kind.PROFILE:
            names = [found for _path, found, _archived in self._profile_files()]
        else:
            folder = self.layout.kind_dir(kind)
            try:
                with os.scandir(folder) as children:
                    names = [child.name for child in children if child.name != ARCHIVED]
            except FileNotFoundError:
                return None
            except NotADirectoryError:  # nothing is written under it: a person rearranged
                where = self.layout.relative(folder)
                raise BrokenFile(f"{where} is a file where somnid keeps a folder") from None
            except PermissionError:
                raise _shut(self.layout.relative(folder)) from None
        twins = (other for other in names if other != name and folded(other) == key)
        return next(twins, None)

    def twin_of(self, path: Path) -> str | None:
        """The live entry whose name differs only in case from the live entry ``path``
        (absolute) would be, while ``path`` is not there itself."""
        located = self.layout.classify(path)
        if located is None or located[2] or os.path.lexists(path.parent):
            return None
        return self._case_twin(located[0], located[1])

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
        """``base`` or ``base-2``, ``base-3``…: a name neither live nor archived; with this
        machine's id after ``base`` when the data dir is synced (two machines can create
        one in the same second)."""
        if self.layout.machine:
            base = f"{base}-{self.layout.machine}"
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
        """``<prefix>-YYYYMMDD-NNN`` with the NNN after the highest a live or archived entry
        holds (a number freed by a purge or a deletion below it is never taken again);
        ``<prefix>-YYYYMMDD-<machine>-NNN`` when the data dir is synced (:attr:`Layout.machine`):
        two machines counting from the same state never take one name."""
        machine = f"{self.layout.machine}-" if self.layout.machine else ""
        stem = f"{prefix}-{day:%Y%m%d}-{machine}"
        taken: set[str] = set()
        for folder in (self.layout.kind_dir(kind), self.layout.archive_dir(kind)):
            try:
                taken.update(c.name for c in folder.iterdir() if c.name.startswith(stem))
            except (FileNotFoundError, NotADirectoryError):
                continue
            except PermissionError:  # its folder may be read, not entered (chmod 600)
                raise _shut(self.layout.relative(folder)) from None
        numbers = [0]
        for name in taken:
            digits = name[len(stem) :].split(ARCHIVE_SUFFIX, 1)[0]
            if digits.isdigit() and digits.isascii() and len(digits) <= SEQUENCE_DIGITS:
                numbers.append(int(digits))  # a longer one is a person's: its next is no name
        return f"{stem}{max(numbers) + 1:03d}"


SEQUENCE_DIGITS = 6
"""Digits of the numbers somnid counts on from (a million a day). A folder a person named
``pi-<today>-`` and 88 nines made every new intention that day a 400 (its next is too long)."""


def _shut(where: object) -> BrokenFile:
    return BrokenFile(f"{where} is a folder somnid may not read; nothing is written in it")
