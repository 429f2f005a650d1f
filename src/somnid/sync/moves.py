"""What git's merge is given: somnid's own moves told, and what a delete meets settled first.

git 2.39's ``merge-tree`` detects renames and cannot be told not to. Entry files share
most of their front-matter, so it paired unrelated entries: an edit of an entry purged on
one machine, made on the other, went into a third entry's archived copy (its body
replaced, the purged text back on every machine). Merging path by path instead loses the
moves git rightly follows: an archive is a move, and the other machine's daily decay edit
of the entry would bring every retired entry back. So the merge is prepared:

* **somnid's own moves** (an entry folder archived or restored by one side, known by the
  layout and the archived copy's ``archived_from``, never by similarity) are made in the
  base and on the other side too: each becomes an edit in place, and the other side's edit
  of the entry goes into its archived copy (or its restored one);
* **a file one side deleted and the other changed** is settled before git sees it: at a
  purge's paths the side that purged decides; elsewhere the edit wins (the deleting side
  gets the base's version back). A delete git may still pair with an add is then one that
  nothing changed: nothing travels through it.

The three trees are written as commits of their own (the base the parent of both sides), so
``merge-tree`` merges them as it would the real ones; the merge commit keeps the real
parents. Unrelated histories (no base) have no moves and no deletes: merged as they are.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from somnid.errors import BrokenFile
from somnid.history.git import Git
from somnid.memory.kinds import Kind
from somnid.memory.names import live_name
from somnid.store import frontmatter
from somnid.store.layout import Layout

Tree = dict[str, tuple[str, str]]
"""path -> (mode, blob) of every file of a commit."""
Move = tuple[str, str]
"""(source folder, target folder) of an entry folder one side moved."""
Blobs = Callable[[list[str]], dict[str, bytes]]

_NAMES = {"GIT_AUTHOR_NAME": "somnid", "GIT_AUTHOR_EMAIL": "sync@somnid"}
_NAMES |= {"GIT_COMMITTER_NAME": "somnid", "GIT_COMMITTER_EMAIL": "sync@somnid"}


def prepared(
    git: Git,
    layout: Layout,
    base: str | None,
    head: str,
    theirs: str,
    decided: dict[str, str],
    blobs: Blobs,
) -> tuple[str, str]:
    """The two commits to give ``merge-tree`` for ``head`` and ``theirs``: themselves when
    there is nothing to tell, else commits over one prepared base. ``decided`` is
    {purged path: the commit whose version stands} (see ``merging._decided_by_purges``)."""
    if base is None:
        return head, theirs
    old, ours, other = tree_of(git, base), tree_of(git, head), tree_of(git, theirs)
    was = (dict(old), dict(ours), dict(other))
    for mover, elsewhere in ((ours, other), (other, ours)):
        for source, target in moves_in(layout, old, mover, blobs):
            if _holds(old, source) and not _holds(old, target) and not _holds(elsewhere, target):
                _move(old, source, target)
                _move(elsewhere, source, target)
    _settle_deletes(old, (ours, head), (other, theirs), decided)
    if (old, ours, other) == was:
        return head, theirs
    with tempfile.TemporaryDirectory(prefix="somnid-moves-") as scratch:
        index = Path(scratch) / "index"
        root = _commit(git, _write_tree(git, index, old), ())
        return (
            _commit(git, _write_tree(git, index, ours), (root,)),
            _commit(git, _write_tree(git, index, other), (root,)),
        )


def moves_in(layout: Layout, base: Tree, side: Tree, blobs: Blobs) -> list[Move]:
    """The entry folders ``side`` moved since ``base``: archived (an archived entry file it
    added whose live entry file it removed) or restored (the other way round)."""
    gone = {path: where for path in base if path not in side and (where := _entry(layout, path))}
    added = {path: where for path in side if path not in base and (where := _entry(layout, path))}
    recorded = {
        path: _recorded(text)
        for tree, entries in ((side, added), (base, gone))
        for path, text in _texts(blobs, tree, [p for p, w in entries.items() if w[2]]).items()
    }
    found: list[Move] = []
    for path, (kind, name, archived) in added.items():
        if archived:  # an archive: its live entry file is gone
            source = _relative(layout, kind, live_name(recorded.get(path), name))
            if source in gone:
                found.append((_folder(source), _folder(path)))
            continue
        sources = [  # a restore: one archived copy of this entry is gone
            old
            for old, (was_kind, was_name, was_archived) in gone.items()
            if was_archived and was_kind is kind and live_name(recorded.get(old), was_name) == name
        ]
        if len(sources) == 1:
            found.append((_folder(sources[0]), _folder(path)))
    return found


def tree_of(git: Git, commit: str) -> Tree:
    out = git.run("ls-tree", "-r", "-z", commit).decode("utf-8")
    tree: Tree = {}
    for record in filter(None, out.split("\0")):
        info, _, path = record.partition("\t")
        mode, _kind, blob = info.split()
        tree[path] = (mode, blob)
    return tree


def _settle_deletes(
    old: Tree, ours: tuple[Tree, str], theirs: tuple[Tree, str], decided: dict[str, str]
) -> None:
    """Each file one side removed and the other changed: as the purge says at its paths
    (the side that purged decides), else the edit wins (the base's version back on the
    side that removed it, so git merges the edit in place). Each side: (tree, commit)."""
    for path, was in old.items():
        for (removed, remover), (changed, _) in ((ours, theirs), (theirs, ours)):
            if path in removed or changed.get(path, was) == was:
                continue
            side = next((c for spec, c in decided.items() if _under(path, spec)), None)
            if side == remover:
                changed.pop(path)  # purged by the side that removed it: stays removed
            else:
                removed[path] = was  # the edit (or what the purging side made) stands


def _recorded(text: bytes) -> object:
    try:
        return frontmatter.parse(text.decode("utf-8"), round_trip=False).meta.get("archived_from")
    except (UnicodeDecodeError, BrokenFile, AttributeError):
        return None


def _entry(layout: Layout, path: str) -> tuple[Kind, str, bool] | None:
    return layout.classify(layout.root / path)


def _relative(layout: Layout, kind: Kind, name: str) -> str | None:
    try:
        return layout.relative(layout.entry_file(kind, name)).as_posix()
    except ValueError:
        return None


def _texts(blobs: Blobs, tree: Tree, paths: list[str]) -> dict[str, bytes]:
    read = blobs([tree[path][1] for path in paths])
    return {path: read.get(tree[path][1], b"") for path in paths}


def _folder(path: str) -> str:
    return str(PurePosixPath(path).parent)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder + "/")


def _holds(tree: Tree, folder: str) -> bool:
    return any(_under(path, folder) for path in tree)


def _move(tree: Tree, source: str, target: str) -> None:
    for path in [p for p in tree if _under(p, source)]:
        tree[target + path[len(source) :]] = tree.pop(path)


def _write_tree(git: Git, index: Path, tree: Tree) -> str:
    env = {"GIT_INDEX_FILE": str(index)}
    index.unlink(missing_ok=True)
    listed = "".join(f"{mode} {blob}\t{path}\0" for path, (mode, blob) in sorted(tree.items()))
    git.run("update-index", "-z", "--add", "--index-info", input=listed.encode(), env=env)
    return git.text("write-tree", env=env).strip()


def _commit(git: Git, tree: str, parents: Iterable[str]) -> str:
    args = [arg for parent in parents for arg in ("-p", parent)]
    return git.text("commit-tree", tree, *args, "-m", "somnid: a merge's side", env=_NAMES).strip()
