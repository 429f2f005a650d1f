"""Undo one commit: a new commit that puts the files it changed back as they were before it.

Refused (409, naming the entries and the commits) when a later commit, or a change not yet
in history, touched one of those files: a revert never overwrites a person's later edit.
The dream journal stays (it is the record that the dream happened). Blocking; the caller
holds the committer's lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from somnid.errors import Conflict, InvalidInput
from somnid.history.committer import Committer
from somnid.history.log import commit as read_commit
from somnid.history.log import under
from somnid.history.messages import labels
from somnid.provenance import Actor
from somnid.store.layout import FOLDER_FILES

KEPT = ("memory/dream-log/", ".gitignore")
MEMORY = ("memory/", "skills/")
"""What a revert may put back: the entries' folders, nothing else in the data dir."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry's share of a commit: ``knowledge/kites`` and the paths it may occupy."""

    label: str
    specs: list[str]


class NothingToRevert(InvalidInput):
    """The commit changed no memory entry (a dream that wrote none: its journal alone)."""


@dataclass(frozen=True, slots=True)
class Reverted:
    reverted: str
    commit: str | None
    paths: list[str]
    reopened_logs: tuple[str, ...] = ()
    """A reverted dream's session logs, pending again (the next dream reads them anew)."""


def revert(
    committer: Committer, commit_id: str, actor: Actor, entry: Entry | None = None
) -> Reverted:
    """Undo ``commit_id``; with ``entry`` (its label and paths), only what it changed of
    that entry: the rest of the commit stays, and only later changes to the entry refuse."""
    git, layout = committer.git, committer.layout
    git.check_attached()  # before any file is put back: the commit would be refused
    info = read_commit(git, layout, commit_id, mark=False)
    # A name read as text is another path: putting that back would restore nothing. (An
    # entry's own paths are always UTF-8: its revert puts back none of those.)
    unnamed = _not_utf8(committer, info.id) if entry is None else []
    if unnamed:
        raise Conflict(
            f"commit {info.id[:12]} changed {', '.join(unnamed)}, whose name is not UTF-8:"
            " somnid cannot put it back; rename it, or revert the commit with git",
            code="name_not_utf8",
        )
    # Only memory: a hand-made commit may also have touched the token, the config or notes
    # of a person's own; a revert never writes or deletes those.
    paths = [
        c.path for c in info.changes if c.path.startswith(MEMORY) and not c.path.startswith(KEPT)
    ]
    if entry is not None:
        paths = [path for path in paths if under(path, entry.specs)]
        if not paths:
            raise InvalidInput(f"commit {info.id[:12]} did not change {entry.label}")
    if not paths:
        raise NothingToRevert(f"commit {info.id[:12]} changed no memory entry to revert")
    conflicts = _later_changes(committer, info.id, paths)
    if conflicts:
        listed = "; ".join(f"{path} ({', '.join(ids)})" for path, ids in conflicts.items())
        raise Conflict(
            f"a later change touched what commit {info.id[:12]} changed: {listed}",
            code="revert_conflict",
            entries=[
                {"path": path, "label": labels(committer.layout, [path])[0], "commits": ids}
                for path, ids in conflicts.items()
            ],
        )
    befores = {path: _blob(committer, info.parent, path) for path in paths}
    for path, before in befores.items():
        target = committer.layout.root / PurePosixPath(path)
        twin = None if before is None else committer.memories.twin_of(target)
        if twin is not None:  # as a create or a restore would be: names are one in any case
            raise Conflict(
                f"reverting {info.id[:12]} would put back {path} beside the entry {twin!r},"
                " whose name differs only in case; rename or archive that one first",
                name=twin,
            )
    for path in sorted(paths, key=lambda p: PurePosixPath(p).name in FOLDER_FILES):
        _put(committer, path, befores[path])
    if entry is None:
        message = f"Revert {info.id[:12]}: {info.subject}\n\nReverts: {info.id}"
        if info.dream_id:
            message += f"\nReverts-Dream: {info.dream_id}"
    else:  # a part of a dream undone is not the dream undone: no Reverts-Dream
        message = f"Revert {info.id[:12]} for {entry.label}: {info.subject}\n\nReverts: {info.id}"
    new = committer.commit_paths(paths, message, actor)
    return Reverted(info.id, new, paths)


def _not_utf8(committer: Committer, sha: str) -> list[str]:
    """The memory paths ``sha`` changed whose names are not UTF-8, as Python spells them."""
    out = committer.git.run(
        "diff-tree", "--root", "-r", "-z", "--name-only", "--no-renames", "--no-commit-id", sha
    )
    found: list[str] = []
    for raw in out.split(b"\0"):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            path = raw.decode("utf-8", "backslashreplace")
            if path.startswith(MEMORY):
                found.append(path)
    return found


def _later_changes(committer: Committer, sha: str, paths: list[str]) -> dict[str, list[str]]:
    out = committer.git.text(
        "log", "--format=%x1e%h", "--name-only", "--no-renames", f"{sha}..HEAD", "--", *paths
    )
    wanted = set(paths)
    found: dict[str, list[str]] = {}
    for record in out.split("\x1e")[1:]:
        short, *files = record.strip().splitlines()
        for path in files:
            if path in wanted:
                found.setdefault(path, []).append(short)
    for path in committer.changed_paths():
        if path in wanted:
            found.setdefault(path, []).append("not yet in history")
    return found


def _blob(committer: Committer, parent: str | None, path: str) -> tuple[bytes, bool] | None:
    """The file as ``parent`` held it, and whether it was executable (a skill's script);
    None where it held nothing. Read from one listing of the path: a link, a folder or a
    submodule there is refused (it was read as the link's text, or as nothing: deleted)."""
    if parent is None:
        return None
    record = committer.git.run("ls-tree", "-z", parent, "--", path).split(b"\0", 1)[0]
    if not record:
        return None
    mode, _kind, oid = record.partition(b"\t")[0].decode("ascii").split()
    if mode not in ("100644", "100755"):
        raise Conflict(
            f"{path} was no regular file in {parent[:12]} (mode {mode}): it is not put back",
            code="revert_conflict",
        )
    return committer.git.run("cat-file", "blob", oid), mode == "100755"


def _put(committer: Committer, path: str, before: tuple[bytes, bool] | None) -> None:
    """Through the store (its write lock, its health), never by hand; with its mode."""
    target = committer.layout.root / PurePosixPath(path)
    # The entry's own folder goes too once empty, never a kind's.
    own_folder = committer.layout.classify(target) is not None and target.name in FOLDER_FILES
    data, executable = before if before is not None else (None, None)
    committer.memories.put_raw(target, data, prune_folder=own_folder, executable=executable)
