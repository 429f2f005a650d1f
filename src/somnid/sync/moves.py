"""What git's merge is given: somnid's own moves told, and what a delete meets settled first.

git 2.39's ``merge-tree`` detects renames and cannot be told not to. Entry files share
most of their front-matter, so it paired unrelated entries: an edit of an entry purged on
one machine, made on the other, went into a third entry's archived copy (its body
replaced, the purged text back on every machine). Merging path by path instead loses the
moves git rightly follows: an archive is a move, and the other machine's daily decay edit
of the entry would bring every retired entry back. So the merge is prepared:

* **somnid's own moves** (an entry folder archived or restored by one side, known by the
  layout, the archived copy's ``archived_from`` and, for an entry archived while a new one
  took its name, its ``created``; never by likeness) are made in the base and on the other
  side too: each becomes an edit in place, and the other side's edit of the entry goes into
  its archived copy (or its restored one). A purge follows them: the purging side decides
  at the place the other side moved the entry to, too;
* **a file one side deleted and the other changed** is settled before git sees it: at a
  purge's paths the side that purged decides; elsewhere the edit wins (the deleting side
  gets the base's version back; not where that side now has a file for a folder, or a
  folder for a file: git settles those). A delete git may still pair with an add is then
  one nothing changed: nothing travels through it.

The three trees are written as commits of their own (the base the parent of both sides), so
``merge-tree`` merges them as it would the real ones; the merge commit keeps the real
parents. Unrelated histories (no base) and histories with more than one merge base (git
merges those over a base it makes of them) are merged as they are; so is any history this
module cannot read (a path that is not UTF-8, say): logged, never a failed sync.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from somnid.errors import BrokenFile, SomnidError
from somnid.history.git import Git
from somnid.memory.kinds import Kind
from somnid.memory.names import folded, live_name
from somnid.store import frontmatter
from somnid.store.layout import Layout

log = logging.getLogger(__name__)

Tree = dict[str, tuple[str, str]]
"""path -> (mode, blob) of every file of a commit."""
Move = tuple[str, str]
"""(source folder, target folder) of an entry folder one side moved."""
Blobs = Callable[[list[str]], dict[str, bytes]]
Where = tuple[Kind, str, bool]
_REGULAR = ("100644", "100755")
_NAMES = {"GIT_AUTHOR_NAME": "somnid", "GIT_AUTHOR_EMAIL": "sync@somnid"}
_NAMES |= {"GIT_COMMITTER_NAME": "somnid", "GIT_COMMITTER_EMAIL": "sync@somnid"}


@dataclass(slots=True)
class Prepared:
    ours: str
    theirs: str
    """The commits to give ``merge-tree``."""
    decided: dict[str, str] = field(default_factory=dict)
    """More {folder: commit whose version stands}: where a purged entry was moved to."""


def prepared(
    git: Git,
    layout: Layout,
    head: str,
    theirs: str,
    decided: dict[str, str],
    blobs: Blobs,
) -> Prepared:
    """The commits to merge for ``head`` and ``theirs``: themselves when there is nothing
    to tell, else commits over one prepared base. ``decided``: {purged path: the commit
    whose version stands} (``merging._decided_by_purges``)."""
    done = git.call("merge-base", "--all", head, theirs)  # 1: unrelated histories
    if done.returncode != 0 or len(bases := done.stdout.decode().split()) != 1:
        return Prepared(head, theirs)
    try:
        return _prepared(git, layout, bases[0], (head, theirs), decided, blobs)
    except (SomnidError, ValueError, UnicodeError) as exc:  # merged as it is: git's guesses
        log.warning("sync: merging without somnid's moves told: %s", exc)
        return Prepared(head, theirs)


def _prepared(
    git: Git,
    layout: Layout,
    base: str,
    sides: tuple[str, str],
    decided: dict[str, str],
    blobs: Blobs,
) -> Prepared:
    head, theirs = sides
    old, ours, other = tree_of(git, base), tree_of(git, head), tree_of(git, theirs)
    was = (dict(old), dict(ours), dict(other))
    by_ours, by_theirs = moves_in(layout, old, ours, blobs), moves_in(layout, old, other, blobs)
    wanted = {folder for move in (*by_ours, *by_theirs) for folder in move}
    in_old, in_ours, in_other = (_Folders(tree, wanted) for tree in (old, ours, other))
    more: dict[str, str] = {}
    for moves, elsewhere, folders, purger in (
        (by_ours, other, in_other, theirs),
        (by_theirs, ours, in_ours, head),
    ):
        for source, target in moves:
            if not in_old.holds(source) or in_old.holds(target) or folders.holds(target):
                continue  # moved already, or the other side has an entry there of its own
            in_old.move(old, source, target)
            folders.move(elsewhere, source, target)
            if next((c for spec, c in decided.items() if _under(source, spec)), None) == purger:
                more[target] = purger  # the other side purged what this side moved
    for source, target in case_twins(layout, old, ours, other):
        _Folders(other, {source}).move(other, source, target)
    settle_deletes(old, (ours, head), (other, theirs), {**decided, **more})
    if (old, ours, other) == was:
        return Prepared(head, theirs, more)
    with tempfile.TemporaryDirectory(prefix="somnid-moves-") as scratch:
        root = _commit(git, _write_tree(git, Path(scratch) / "base", old), ())
        return Prepared(
            _commit(git, _write_tree(git, Path(scratch) / "ours", ours), (root,)),
            _commit(git, _write_tree(git, Path(scratch) / "theirs", other), (root,)),
            more,
        )


def moves_in(layout: Layout, base: Tree, side: Tree, blobs: Blobs) -> list[Move]:
    """The entry folders ``side`` moved since ``base``: archived (an archived entry file it
    added whose live entry it removed, or replaced by a new entry of that name) or restored
    (the other way round)."""
    gone = {p: w for p in base if p not in side and (w := _entry(layout, base, p))}
    added = {p: w for p in side if p not in base and (w := _entry(layout, side, p))}
    read = _fields(blobs, [(side, p) for p, w in added.items() if w[2]], "archived_from")
    read |= _fields(blobs, [(base, p) for p, w in gone.items() if w[2]], "archived_from")
    found: list[Move] = []
    for path, (kind, name, archived) in added.items():
        if archived:  # an archive: its live entry file is gone (or a new entry took it)
            sources = [_relative(layout, kind, n) for n in (name, live_name(read[path], name))]
            source = next((s for s in sources if s in gone), None)
            if source is None:
                kept = [s for s in sources if s in base and s in side and _entry(layout, side, s)]
                source = _replaced(blobs, base, side, path, kept)
            if source is not None:
                found.append((_folder(source), _folder(path)))
            continue
        restored = [  # a restore: one archived copy of this entry is gone
            old
            for old, (was_kind, was_name, was_archived) in gone.items()
            if was_archived and was_kind is kind and live_name(read[old], was_name) == name
        ]
        if len(restored) == 1:
            found.append((_folder(restored[0]), _folder(path)))
    return found


def case_twins(layout: Layout, base: Tree, ours: Tree, other: Tree) -> list[Move]:
    """(the other side's folder, ours) of each entry the other side made whose name ours
    holds in another case or Unicode form (``Casey`` and ``casey``): one name for a person,
    and one folder on a case-insensitive file system. Told as one, git merges the two as
    one entry made on both sides (a body that differs is kept beside it as a conflict).
    Twins the other side holds already among themselves are left as they are."""
    made: dict[tuple[Kind, bool, str], list[str]] = {}
    for path in other:
        if path in base or path in ours or (where := _entry(layout, other, path)) is None:
            continue
        made.setdefault((where[0], where[2], folded(where[1])), []).append(_folder(path))
    if not made:
        return []
    names = {key[2] for key in made}
    held: dict[tuple[Kind, bool, str], str] = {}
    for path in ours:  # only the files whose folder's name folds as one the other side made
        parts = path.rsplit("/", 2)
        named = len(parts) == 3 and folded(parts[1]) in names
        if named and (where := _entry(layout, ours, path)) is not None:
            held[(where[0], where[2], folded(where[1]))] = _folder(path)
    found: list[Move] = []
    mine = _parents(ours) if held else set()
    for key, folders in made.items():
        twin = held.get(key)
        if twin is not None and len(folders) == 1 and folders[0] != twin and folders[0] not in mine:
            found.append((folders[0], twin))
    return found


def settle_deletes(
    old: Tree, ours: tuple[Tree, str], theirs: tuple[Tree, str], decided: dict[str, str]
) -> None:
    """Each file one side removed and the other changed: as the purge says at its paths
    (the side that purged decides), else the edit wins (the base's version back on the
    side that removed it, so git merges the edit in place). Each side: (tree, commit)."""
    folders = {id(tree): _parents(tree) for tree in (ours[0], theirs[0])}
    for path, was in old.items():
        for (removed, remover), (changed, _) in ((ours, theirs), (theirs, ours)):
            if path in removed or changed.get(path, was) == was:
                continue
            side = next((c for spec, c in decided.items() if _under(path, spec)), None)
            if side == remover:
                changed.pop(path)  # purged by the side that removed it: stays removed
            elif path not in folders[id(removed)] and not _file_above(removed, path):
                removed[path] = was  # the edit (or what the purging side made) stands


def tree_of(git: Git, commit: str) -> Tree:
    out = git.run("ls-tree", "-r", "-z", commit).decode("utf-8", "surrogateescape")
    tree: Tree = {}
    for record in filter(None, out.split("\0")):
        info, _, path = record.partition("\t")
        mode, _kind, blob = info.split()
        tree[path] = (mode, blob)
    return tree


class _Folders:
    """The files under each of a few folders of one tree, kept as moves change it."""

    def __init__(self, tree: Tree, folders: set[str]) -> None:
        self.under: dict[str, set[str]] = {folder: set() for folder in folders}
        for path in tree:
            for folder in _ancestors(path):
                if folder in self.under:
                    self.under[folder].add(path)

    def holds(self, folder: str) -> bool:
        return bool(self.under.get(folder))

    def move(self, tree: Tree, source: str, target: str) -> None:
        moved = self.under.pop(source, set())
        self.under[source] = set()
        for path in moved:
            new = target + path[len(source) :]
            tree[new] = tree.pop(path)
            self.under.setdefault(target, set()).add(new)


def _entry(layout: Layout, tree: Tree, path: str) -> Where | None:
    """(kind, name, archived) of an entry file that is a regular file (not a link)."""
    return layout.classify(layout.root / path) if tree[path][0] in _REGULAR else None


def _replaced(blobs: Blobs, base: Tree, side: Tree, copy: str, sources: list[str]) -> str | None:
    """The live entry file ``copy`` was archived from while a new entry took its name: the
    copy was created when the base's entry was, the side's entry later. An entry written by
    hand has no ``created``: then the copy says what the base's entry said (its body and
    description) and the side's entry something else."""
    for source in sources:
        made = _fields(blobs, [(side, copy), (base, source)], "created")
        now = _fields(blobs, [(side, source)], "created")
        if made[copy] is not None and made[copy] == made[source] != now[source]:
            return source
        if made[copy] is None and made[source] is None:
            said = _said(blobs, [(side, copy), (base, source), (side, source)])
            if said[0] is not None and said[0] == said[1] != said[2]:
                return source
    return None


def _said(blobs: Blobs, files: list[tuple[Tree, str]]) -> list[tuple[object, str] | None]:
    """(description, body) of each file, None where it does not parse."""
    texts = blobs([tree[path][1] for tree, path in files])
    found: list[tuple[object, str] | None] = []
    for tree, path in files:
        try:
            doc = frontmatter.parse(texts.get(tree[path][1], b"").decode("utf-8"), round_trip=False)
        except (UnicodeDecodeError, BrokenFile):
            found.append(None)
            continue
        # As an archive writes it again: the body's blank lines and its last newline aside.
        found.append((doc.meta.get("description"), doc.body.strip()))
    return found


def _fields(blobs: Blobs, files: list[tuple[Tree, str]], key: str) -> dict[str, object]:
    """{path: the value of ``key`` in its front-matter (None where it has none)}."""
    texts = blobs([tree[path][1] for tree, path in files])
    return {path: _field(texts.get(tree[path][1], b""), key) for tree, path in files}


def _field(text: bytes, key: str) -> object:
    try:
        meta = frontmatter.parse(text.decode("utf-8"), round_trip=False).meta
    except (UnicodeDecodeError, BrokenFile):
        return None
    return meta.get(key) if isinstance(meta, dict) else None


def _relative(layout: Layout, kind: Kind, name: str) -> str | None:
    try:
        return layout.relative(layout.entry_file(kind, name)).as_posix()
    except ValueError:
        return None


def _folder(path: str) -> str:
    return str(PurePosixPath(path).parent)


def _ancestors(path: str) -> Iterable[str]:
    parts = path.split("/")
    return ("/".join(parts[:depth]) for depth in range(1, len(parts)))


def _parents(tree: Tree) -> set[str]:
    return {folder for path in tree for folder in _ancestors(path)}


def _file_above(tree: Tree, path: str) -> bool:
    return any(folder in tree for folder in _ancestors(path))


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def _write_tree(git: Git, index: Path, tree: Tree) -> str:
    env = {"GIT_INDEX_FILE": str(index)}  # a fresh scratch index for each tree
    listed = "".join(f"{mode} {blob}\t{path}\0" for path, (mode, blob) in sorted(tree.items()))
    git.run(
        "update-index", "-z", "--add", "--index-info",
        input=listed.encode("utf-8", "surrogateescape"), env=env,
    )  # fmt: skip
    return git.text("write-tree", env=env).strip()


def _commit(git: Git, tree: str, parents: Iterable[str]) -> str:
    args = [arg for parent in parents for arg in ("-p", parent)]
    return git.text("commit-tree", tree, *args, "-m", "somnid: a merge's side", env=_NAMES).strip()
