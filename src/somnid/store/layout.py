"""Where everything lives in the data dir. One precise layout, compatible with the original.

<data>/
  memory/
    about_me.md                             profile "about_me" (the agent itself)
    about_user.md                           legacy default-user profile (read-only fallback)
    users/<id>/about_user.md                profile "<id>"
    knowledge/<name>/SKILL.md               knowledge
    archived/<name>/SKILL.md                archived knowledge (the original's place)
    episodes/<name>/SKILL.md                episode
    episodes/archived/<name>/SKILL.md       archived episode
    intentions/<id>/INTENT.md               intention
    intentions/archived/<id>/INTENT.md      closed intention
    session-log/<date>_<NNN>.md             session log, pending (<date>_<NNN>-<machine>.md
                                            when synced)
    session-log/archived/<date>_<NNN>.md    session log, processed
    dream-log/<date>_dream_<NNN>.md         dream journal (<date>_dream_<NNN>-<machine>.md
                                            when synced: two machines never take one name)
  skills/
    agent_learned_skills/<name>/SKILL.md    skill
    archived/agent_learned_skills/<name>/   archived skill
  models/                                   embedding models (derived)
  index/                                    the SQLite index (derived)
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from somnid.memory.kinds import SELF_PROFILE, Kind

ARCHIVED = "archived"
LEGACY_DEFAULT_USER = "default"

_KIND_DIRS = {
    Kind.KNOWLEDGE: PurePosixPath("memory/knowledge"),
    Kind.EPISODE: PurePosixPath("memory/episodes"),
    Kind.INTENTION: PurePosixPath("memory/intentions"),
    Kind.SKILL: PurePosixPath("skills/agent_learned_skills"),
    Kind.PROFILE: PurePosixPath("memory/users"),
}
_ARCHIVE_DIRS = {
    Kind.KNOWLEDGE: PurePosixPath("memory/archived"),
    Kind.EPISODE: PurePosixPath("memory/episodes/archived"),
    Kind.INTENTION: PurePosixPath("memory/intentions/archived"),
    Kind.SKILL: PurePosixPath("skills/archived/agent_learned_skills"),
}
_FILE_NAMES = {
    Kind.KNOWLEDGE: "SKILL.md",
    Kind.EPISODE: "SKILL.md",
    Kind.INTENTION: "INTENT.md",
    Kind.SKILL: "SKILL.md",
    Kind.PROFILE: "about_user.md",
}
FOLDER_FILES = frozenset(name for kind, name in _FILE_NAMES.items() if kind is not Kind.PROFILE)
"""The names of the file in an entry's folder (its folder is the entry: history's unit)."""
ENTRY_FILES = FOLDER_FILES | {"about_me.md", _FILE_NAMES[Kind.PROFILE]}
"""The name of every entry file, profiles' included: what the watcher reads again."""
JOURNAL_NAME = re.compile(
    r"^(?P<day>\d{4}-\d{2}-\d{2})_dream_(?P<number>\d{3,})(?:-(?P<machine>[0-9a-f]{6}))?\.md$"
)
"""A dream journal's file name in ``memory/dream-log/``; its stem is the dream's id."""
DREAM_ID = re.compile(r"\d{4}-\d{2}-\d{2}_dream_\d{3,}(?:-[0-9a-f]{6})?")


def journal_file_name(day: dt.date, number: int, machine: str | None = None) -> str:
    """The name of a day's ``number``-th dream journal: ``2026-10-10_dream_001.md``, with
    the machine's id when the data dir is synced (``2026-10-10_dream_001-3fa9c2.md``)."""
    return f"{day.isoformat()}_dream_{number:03d}{f'-{machine}' if machine else ''}.md"


@dataclass(frozen=True, slots=True)
class Layout:
    root: Path
    machine: str | None = None
    """This machine's id when the data dir is synced (names of the files it adds)."""

    @property
    def memory_dir(self) -> Path:
        return self.root / "memory"

    @property
    def skills_dir(self) -> Path:
        return self.root / "skills"

    @property
    def models_dir(self) -> Path:
        return self.root / "models"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def session_log_dir(self) -> Path:
        return self.memory_dir / "session-log"

    @property
    def session_log_archive(self) -> Path:
        return self.session_log_dir / ARCHIVED

    @property
    def dream_log_dir(self) -> Path:
        return self.memory_dir / "dream-log"

    @property
    def upkeep_clock(self) -> Path:
        """Upkeep's own time, kept across restarts (``store/upkeep_clock.py``)."""
        return self.root / "upkeep-clock.json"

    @property
    def legacy_user_profile(self) -> Path:
        return self.memory_dir / "about_user.md"

    def kind_dir(self, kind: Kind) -> Path:
        return self.root / _KIND_DIRS[kind]

    def archive_dir(self, kind: Kind) -> Path:
        return self.root / _ARCHIVE_DIRS[kind]

    def file_name(self, kind: Kind) -> str:
        return _FILE_NAMES[kind]

    def entry_file(self, kind: Kind, name: str, *, archived: bool = False) -> Path:
        """The file of an entry; ``name`` must already be a checked slug."""
        if kind is Kind.PROFILE:
            if archived:
                raise ValueError("profiles are never archived")
            if name == SELF_PROFILE:
                return self.memory_dir / "about_me.md"
        folder = self.archive_dir(kind) if archived else self.kind_dir(kind)
        return folder / name / self.file_name(kind)

    def entry_folder(self, kind: Kind, name: str, *, archived: bool = False) -> Path:
        return self.entry_file(kind, name, archived=archived).parent

    def classify(self, path: Path) -> tuple[Kind, str, bool] | None:
        """(kind, name, archived) of an entry file, or None if ``path`` is not one."""
        try:
            rel = PurePosixPath(path.relative_to(self.root).as_posix())
        except ValueError:
            return None
        if rel == PurePosixPath("memory/about_me.md"):
            return Kind.PROFILE, SELF_PROFILE, False
        if rel == PurePosixPath("memory/about_user.md"):
            return Kind.PROFILE, LEGACY_DEFAULT_USER, False
        parts = rel.parts
        if len(parts) < 2:
            return None
        folder, name, file_name = rel.parent.parent, rel.parent.name, rel.name
        for kind in Kind:
            if file_name != _FILE_NAMES[kind]:
                continue
            if folder == _KIND_DIRS[kind] and name != ARCHIVED:
                return kind, name, False
            if kind in _ARCHIVE_DIRS and folder == _ARCHIVE_DIRS[kind]:
                return kind, name, True
        return None

    def is_entry_path(self, path: Path) -> bool:
        """Whether ``path`` is an entry's folder, or a profile's file."""
        if ".." in path.parts:
            return False
        inside = (path / name for name in FOLDER_FILES)
        return any(self.classify(file) is not None for file in (path, *inside))

    def top_of(self, path: Path) -> Path | None:
        """The innermost of :meth:`kept` that holds ``path`` (or is it): the folder a write
        there never makes again (:func:`somnid.store.atomic.ensure_dir`)."""
        holding = [folder for folder in self.kept() if path == folder or folder in path.parents]
        return max(holding, key=lambda folder: len(folder.parts), default=None)

    def kept(self) -> tuple[Path, ...]:
        """memory/, skills/ and each kind's folder, made at start. One a person moves away
        while somnid runs is not made again by a write: a new, nearly empty one in its
        place and history recorded every entry of it as deleted (sync took that to every
        machine), and the folder put back then landed inside the new one."""
        return (*self.tops(), *(self.kind_dir(kind) for kind in Kind))

    def tops(self) -> tuple[Path, Path]:
        """The two folders history keeps, made at start."""
        return self.memory_dir, self.skills_dir

    def relative(self, path: Path) -> PurePosixPath:
        return PurePosixPath(path.relative_to(self.root).as_posix())

    def skeleton(self) -> list[Path]:
        """The folders a new data dir is given, so a person browsing it sees the shape."""
        return [
            self.kind_dir(Kind.KNOWLEDGE),
            self.kind_dir(Kind.EPISODE),
            self.kind_dir(Kind.INTENTION),
            self.kind_dir(Kind.SKILL),
            self.kind_dir(Kind.PROFILE),
            self.session_log_dir,
            self.dream_log_dir,
            self.models_dir,
        ]
