"""Reading the history: commits with the entries they changed, and a commit's diff per entry.

Blocking (git runs as a child process); :class:`somnid.history.service.History` calls these
from a worker thread.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from somnid.errors import InvalidInput, NotFound
from somnid.history.git import Git
from somnid.store.layout import DREAM_ID, Layout

_COMMIT = re.compile(r"^[0-9a-fA-F]{4,40}$")
_TRAILER = re.compile(r"^([A-Za-z-]+): (.*)$")
_WHOLE_REVERT = re.compile(r"^Revert [0-9a-f]{12}: ")
"""A revert of a whole commit (revert.py); one of a single entry says ``for <entry>``."""
_FIELDS = ("%H", "%P", "%an", "%ae", "%aI", "%B")


_MERGES = "--diff-merges=first-parent"
"""A merge's changes are what it brought into this machine's history (a sync's merge of the
other machine's edits): shown, and undone, like any commit's. Without it a merge listed none
and could not be reverted."""


def _format() -> tuple[str, str, str]:
    """``git log``'s format and its record and field separators. They hold a fresh random
    mark: a commit's text may hold any byte (a hand commit, one that came by sync), and
    a fixed separator in it split the record wrongly (a 500 on every history read)."""
    mark = secrets.token_hex(8)
    record, field = f"\x1e{mark}\x1e", f"\x1f{mark}\x1f"
    return f"--format={record}{field.join(_FIELDS)}{field}", record, field


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    status: str  # added | modified | deleted
    kind: str | None = None
    name: str | None = None
    archived: bool = False


@dataclass(slots=True)
class Commit:
    id: str
    parent: str | None
    author: str
    source: str
    date: str
    subject: str
    message: str
    trailers: dict[str, str] = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    reverted_by: str | None = None
    """The commit that undid this one whole, while that undoing stands (a revert of it puts
    this one back)."""

    @property
    def dream_id(self) -> str | None:
        return self.trailers.get("Dream-Id")


@dataclass(frozen=True, slots=True)
class EntryDiff:
    change: Change
    diff: str


_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "modified"}


def check_commit(commit: str) -> str:
    if not _COMMIT.match(commit):
        raise InvalidInput(f"{commit!r} is not a commit id (4 to 40 hex digits)")
    return commit


def check_path(path: str) -> str:
    """A file or folder of the data dir, as the history names it: relative, inside."""
    parts = PurePosixPath(path.replace("\\", "/")).parts
    if path.startswith(("/", "\\")) or ".." in parts:
        raise InvalidInput(f"{path[:80]!r} is not a path inside the data dir (memory/…)")
    return path


def resolve(git: Git, commit: str) -> str:
    check_commit(commit)
    done = git.call("rev-parse", "--verify", "-q", f"{commit}^{{commit}}")
    if done.returncode != 0:
        raise NotFound(f"no commit {commit} in the memory history")
    return done.stdout.decode().strip()


def change_of(layout: Layout, status: str, path: str) -> Change:
    what = layout.classify(layout.root / PurePosixPath(path))
    state = _STATUS.get(status[:1], "modified")
    if what is None:
        return Change(path, state)
    kind, name, archived = what
    return Change(path, state, kind.value, name, archived)


def _source(email: str) -> str:
    """Who made a commit: somnid's authors are ``<source>@somnid``; anyone else is a
    person (``hand``), whose address is not shown."""
    source, _, domain = email.partition("@")
    return source if domain == "somnid" else "hand"


def _log(git: Git, layout: Layout, *args: str) -> list[Commit]:
    """``git log`` with ``args``, read into commits."""
    form, record, field = _format()
    out = git.text("log", form, _MERGES, *args)
    commits: list[Commit] = []
    for text in out.split(record)[1:]:
        sha, parents, author, email, date, message, files = text.split(field, 6)
        trailers: dict[str, str] = {}
        for line in message.strip().split("\n")[1:]:
            match = _TRAILER.match(line.strip())
            if match:
                trailers[match.group(1)] = match.group(2).strip()
        changes = []
        for line in files.strip("\n").splitlines():
            status, _, path = line.partition("\t")
            if path:
                changes.append(change_of(layout, status, path))
        commits.append(
            Commit(
                id=sha,
                parent=parents.split()[0] if parents.strip() else None,
                author=author,
                source=_source(email),
                date=date,
                subject=message.strip().split("\n")[0] if message.strip() else "",
                message=message.strip(),
                trailers=trailers,
                changes=changes,
            )
        )
    return commits


def commits(
    git: Git,
    layout: Layout,
    *,
    offset: int = 0,
    limit: int = 20,
    dreams: bool = False,
    path: str | None = None,
    paths: list[str] | None = None,
) -> tuple[list[Commit], int]:
    """A page of commits, newest first, and how many there are in all; with ``path`` or
    ``paths``, only the commits that touched one of them (a folder means what is in it)."""
    if not git.has_head():
        return [], 0
    select = ["--grep=^Dream-Id: "] if dreams else []
    wanted = ([path] if path else []) + (paths or [])
    where = ["--", *wanted] if wanted else []
    full = ["--full-diff"] if wanted else []  # a commit's changes are all of them, always
    found = _log(
        git, layout, "--name-status", *full, "--no-renames", f"--skip={offset}",
        f"--max-count={limit}", *select, "HEAD", *where,
    )  # fmt: skip
    total = int(git.text("rev-list", "--count", *select, "HEAD", *where).strip() or 0)
    _mark_reverted(git, found)
    return found, total


def commit(git: Git, layout: Layout, commit_id: str, *, mark: bool = True) -> Commit:
    """One commit; ``mark``: with ``reverted_by`` (a walk from it to HEAD, which a revert,
    reading the commit it undoes, has no use for)."""
    sha = resolve(git, commit_id)
    found = _log(git, layout, "--name-status", "--no-renames", "-1", sha)
    if mark:
        _mark_reverted(git, found)
    return found[0]


def _mark_reverted(git: Git, found: list[Commit]) -> None:
    """Set ``reverted_by`` on the commits that a standing whole revert undid."""
    if not found:
        return
    # A revert comes after what it undoes: the walk starts at the oldest commit asked about.
    oldest = found[-1].id
    out = git.text(
        "log", "--format=%x1e%H%x1f%s%x1f%(trailers:key=Reverts,valueonly,separator=%x1f)",
        "--grep=^Reverts: ", f"{oldest}..HEAD",
    )  # fmt: skip
    undone_by: dict[str, str] = {}
    for record in out.split("\x1e")[1:]:
        sha, subject, *targets = record.strip("\n").split("\x1f")
        if _WHOLE_REVERT.match(subject):
            for target in (value.strip() for value in targets if value.strip()):
                undone_by.setdefault(target, sha)  # newest first: the last revert of it

    def standing(sha: str) -> bool:
        """Whether ``sha``'s changes stand: not undone, or its undoing undone in turn."""
        flips = 0
        while sha in undone_by and flips < 64:
            sha = undone_by[sha]
            flips += 1
        return flips % 2 == 0

    for info in found:
        by = undone_by.get(info.id)
        if by is not None and standing(by):
            info.reverted_by = by


def diffs(
    git: Git, layout: Layout, commit_id: str, paths: list[str] | None = None
) -> tuple[Commit, list[EntryDiff]]:
    """The commit and, per file it changed (only under ``paths`` if given), its unified
    diff."""
    info = commit(git, layout, commit_id)
    return info, _patches(git, info, paths)


def _patches(git: Git, info: Commit, paths: list[str] | None) -> list[EntryDiff]:
    where = ["--", *paths] if paths else []
    out = git.text(
        "show", "--format=", _MERGES, "--no-renames", "--patch", "--no-color", info.id, *where
    )  # fmt: skip
    parts: dict[str, str] = {}
    for chunk in re.split(r"(?m)^(?=diff --git )", out):
        if not chunk.startswith("diff --git "):
            continue
        header = chunk.splitlines()[0]
        match = re.match(r"diff --git a/(.*) b/(.*)$", header)
        if match:
            parts[match.group(2)] = chunk
    changes = [c for c in info.changes if paths is None or under(c.path, paths)]
    return [EntryDiff(change, parts.get(change.path, "")) for change in changes]


def under(path: str, specs: list[str]) -> bool:
    """Whether ``path`` is one of ``specs`` or inside one of them (a folder)."""
    return any(path == spec or path.startswith(f"{spec.rstrip('/')}/") for spec in specs)


def entry_log(
    git: Git, layout: Layout, specs: list[str], *, offset: int, limit: int, dreams: bool = False
) -> tuple[list[tuple[Commit, list[EntryDiff]]], int]:
    """A page of the commits that touched one entry (its ``specs``: live and archived
    folder, or a profile's file), newest first, each with the diffs of that entry only."""
    page, total = commits(git, layout, offset=offset, limit=limit, dreams=dreams, paths=specs)
    return [(info, _patches(git, info, specs)) for info in page], total


def find_dream(git: Git, dream_id: str) -> str:
    if not DREAM_ID.fullmatch(dream_id):
        raise InvalidInput(f"{dream_id!r} is not a dream id like 2026-10-10_dream_001")
    if git.has_head():
        out = git.text("log", "--format=%H", f"--grep=^Dream-Id: {dream_id}$", "HEAD")
        found = out.split()
        if found:
            return found[-1]
    raise NotFound(f"no dream {dream_id} in the memory history")
