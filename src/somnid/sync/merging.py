"""Merging the remote's history into ours without git touching the work tree.

Blocking; the caller holds the committer's lock. ``git merge-tree --write-tree`` merges the
two commits into a tree, as :mod:`somnid.sync.moves` prepares them (somnid's own moves told,
each delete that meets an edit settled: git's rename detection never pairs two entries);
somnid's merge driver merges the entry files both sides changed;
what could still not merge is settled here (ours stays, theirs is stored beside it as a
conflict file; an edit beats a delete); the merge commit is written; then every file the
merge changed is put in place through ``MemoryService.put_raw`` (the store, the one writer
of memory files) before HEAD moves. A SIGKILL anywhere leaves either the old HEAD with
some merged files on disk (committed at the next start, merged again cleanly) or the new
HEAD: never a repository git refuses.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from somnid.errors import BrokenFile, SomnidError
from somnid.history import purge as purging
from somnid.history.committer import Committer
from somnid.history.git import BRANCH, Git, GitError
from somnid.memory.names import folded
from somnid.provenance import Actor
from somnid.store.layout import ENTRY_FILES, FOLDER_FILES, Layout
from somnid.sync import moves, purges
from somnid.sync.merge import DRIVER, merge_entry
from somnid.sync.remote import TRACKING

log = logging.getLogger(__name__)
SYNC = Actor("sync", "somnid sync")
APPLIED = ("memory/", "skills/")
SKIPPED = ("memory/session-log/",)
CONFLICT_MARK = ".conflict-"
"""A conflict file is its entry file's name with ``.conflict-<commit>`` before ``.md``."""
_REGULAR = ("100644", "100755")
_GONE = "000000"
MERGE_ATTEMPTS = 3


@dataclass(slots=True)
class Merge:
    head: str | None
    """The commit HEAD is at after the merge (None: the repository has none yet)."""
    changed: list[str] = field(default_factory=list)
    """Files the merge wrote or removed in the work tree (relative paths)."""
    conflicts: list[str] = field(default_factory=list)
    """Conflict files it stored (relative paths)."""
    rewritten: bool = False
    """A purge with ``history`` rewrote the merged history: the push replaces the remote's
    branch (with a lease on what was fetched)."""
    loose: list[str] = field(default_factory=list)
    """Of ``changed``, the files no commit holds yet (a conflict kept beside a file a person
    is editing): history commits them."""


MERGED_ON = "Sync: the remote's memory merged on "
"""A merge commit's subject, the machine's id after it (read back by ``mergedOn``)."""


def conflict_path(path: str, commit: str) -> str:
    """``SKILL.md`` → ``SKILL.conflict-<commit>.md``; ``Makefile`` → ``Makefile.conflict-<commit>``
    (with a suffix added, its entry file was read as ``Makefile.md``)."""
    pure = PurePosixPath(path)
    return str(pure.with_name(f"{pure.stem}{CONFLICT_MARK}{commit[:12]}{pure.suffix}"))


def merge_remote(
    committer: Committer, theirs: str | None, machine: str, pruning: purges.Pruning
) -> Merge:
    """Bring ``theirs`` (a fetched commit) into HEAD: nothing, a fast-forward or a merge
    (its message names this ``machine``; never the remote's URL, which may hold a secret).
    Purges travel as :mod:`somnid.sync.purges` says; ``pruning`` guards a history rewrite."""
    git = committer.git
    head = _head(git)
    forgotten: list[str] = []
    base = _merge_base(git, head, theirs) if theirs and head else None
    if theirs is not None and head is not None:  # a purge with history, received: forget
        received = purges.fresh(git, theirs, base)
        specs = purges.in_history(git, received)
        if specs:
            received = [purge for purge in received if purge.history]
            specs += purges.local_copies(committer, received)
            forgotten = purges.forget_locally(committer, specs, pruning)
            head = _head(git)
    if theirs is None or theirs == head or (head and _ancestor(git, theirs, head)):
        return Merge(head, forgotten)
    # Local writes not yet committed go first, so a merged file never overwrites one; the
    # merge is computed without holding up writes, then put in place under the store's lock
    # if no write landed meanwhile (else again; the last attempt holds the lock throughout).
    for attempt in range(MERGE_ATTEMPTS):
        last = attempt == MERGE_ATTEMPTS - 1
        with committer.memories.exclusive() if last else contextlib.nullcontext():
            head, broken = _commit_local(committer)
            if head is None or _ancestor(git, head, theirs):
                new, conflicts = theirs, list[str]()
            else:
                new, conflicts = _merge_commit(git, committer.layout, head, theirs, machine)
            plan = _plan(committer, head, new, keep=broken)
            with committer.memories.exclusive():
                if not last and _written_since(committer, head, plan):
                    continue
                changed = _apply(committer, plan)
                aside = _beside_kept(committer, head, new, broken)
                changed, conflicts = changed + aside, conflicts + aside
                git.run("read-tree", new)
                # read-tree drops the index's file times: refreshed here (somnid's own
                # statuses take no lock to do it), or every status hashes every file.
                git.call("update-index", "-q", "--refresh")
                git.run(
                    "update-ref", "-m", "somnid sync", f"refs/heads/{BRANCH}", new,
                    *([head] if head else []),
                )  # fmt: skip
            break
    if aside:  # committed here, under the merge's name: a sweep would take it as a hand edit
        try:
            note = f" ({len(aside)} conflict(s) kept beside a file being edited)"
            committer.commit_paths(aside, f"{MERGED_ON}{machine}{note}", SYNC)
            new, aside = _head(git) or new, []
        except GitError as exc:  # history's next commit takes them (loose)
            log.warning("sync: the conflicts kept aside wait for history's commit: %s", exc)
    # The purging machine: the merge brought the remote's old versions back as ancestors.
    # (Only a purge new to this merge: an entry made again later keeps its history.)
    ours = [purge for purge in purges.fresh(git, new, base) if purge.history]
    copies = [path for purge in ours for path in purges.copies_in(git, theirs, purge)]
    again = purges.in_history(git, ours, new, also=copies)
    if not again:
        return Merge(new, changed + forgotten, conflicts, loose=aside)
    git.run("update-ref", "-d", TRACKING)  # nothing may keep the old versions reachable
    purging.rewrite(git, again, pruning=pruning)
    return Merge(_head(git), changed + forgotten, conflicts, rewritten=True, loose=aside)


def _merge_base(git: Git, one: str, other: str) -> str | None:
    done = git.call("merge-base", one, other)
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def _head(git: Git) -> str | None:
    done = git.call("rev-parse", "--verify", "-q", "HEAD")
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


def _ancestor(git: Git, older: str, newer: str) -> bool:
    return git.call("merge-base", "--is-ancestor", older, newer).returncode == 0


def _merge_commit(
    git: Git, layout: Layout, head: str, theirs: str, machine: str
) -> tuple[str, list[str]]:
    base = _merge_base(git, head, theirs)
    decided = _decided_by_purges(git, base, head, theirs)
    # git is told somnid's own moves and never meets a delete against an edit: its rename
    # detection then has nothing to pair that carries an edit (somnid.sync.moves).
    told = moves.prepared(git, layout, head, theirs, decided, lambda ids: _blobs(git, ids))
    ours, other, decided = told.ours, told.theirs, {**decided, **told.decided}
    with tempfile.TemporaryDirectory(prefix="somnid-sync-") as scratch:
        # Entry files both sides changed are left unmerged by git (the driver is "false"
        # here, a fork instead of a Python start a file) and merged below, in process, by
        # the same rules as somnid's driver (somnid.sync.merge).
        done = git.call(
            "-c", f"merge.{DRIVER}.driver=false",
            "merge-tree", "--write-tree", "--allow-unrelated-histories", "-z", ours, other,
        )  # fmt: skip
        if done.returncode not in (0, 1):
            said = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise GitError(f"git merge-tree failed ({done.returncode}): {said}")
        tree, stages = _parse_merge_tree(done.stdout)
        aside: dict[str, bytes] = {}
        fixed: dict[str, str] = {}
        texts = _blobs(git, [blob for by in stages.values() for _mode, blob in by.values()])
        for path, by_stage in stages.items():
            mine, yours = by_stage.get(2), by_stage.get(3)
            if mine and yours:
                was = by_stage.get(1)
                merged, aside_theirs = _merge_file(
                    path, texts[was[1]] if was else b"", texts[mine[1]], texts[yours[1]]
                )
                fixed[path] = (
                    mine[1]
                    if merged is None
                    else git.run("hash-object", "-w", "--stdin", input=merged).decode().strip()
                )
                if aside_theirs:  # would not merge: ours stays, theirs beside it
                    aside[conflict_path(path, theirs)] = texts[yours[1]]
            elif mine or yours:  # modify/delete: the edit wins
                fixed[path] = (mine or yours or ("", ""))[1]
        if decided:  # the side that purged decides what is at its paths
            fixed = {p: b for p, b in fixed.items() if not _under(p, decided)}
            aside = {p: d for p, d in aside.items() if not _under(p, decided)}
        if fixed or aside or decided:
            index = Path(scratch) / "index"
            tree = _amend_tree(git, index, tree, stages, fixed, aside, decided)
    message = f"{MERGED_ON}{machine}" + (
        f" ({len(aside)} conflict(s) kept beside their entry)" if aside else ""
    )
    commit = git.text(
        "commit-tree", tree, "-p", head, "-p", theirs, "-m", message,
        env={"GIT_AUTHOR_NAME": SYNC.name, "GIT_AUTHOR_EMAIL": f"{SYNC.source}@somnid"},
    ).strip()  # fmt: skip
    return commit, sorted(aside)


def _merge_file(path: str, base: bytes, ours: bytes, theirs: bytes) -> tuple[bytes | None, bool]:
    """(the merged file, or None to keep ours as it is; whether theirs goes beside it)."""
    if PurePosixPath(path).name not in ENTRY_FILES:
        return None, True  # not an entry: git could not merge it, so both are kept
    try:
        merged = merge_entry(base.decode("utf-8"), ours.decode("utf-8"), theirs.decode("utf-8"))
    except (UnicodeDecodeError, BrokenFile):
        return None, True
    return merged.text.encode("utf-8"), merged.theirs_kept_aside


def _parse_merge_tree(out: bytes) -> tuple[str, dict[str, dict[int, tuple[str, str]]]]:
    """The tree id and, per conflicted path, {stage: (mode, blob)} (1 base, 2 ours, 3 theirs)."""
    fields = out.split(b"\0")
    tree = fields[0].decode().strip()
    stages: dict[str, dict[int, tuple[str, str]]] = {}
    for raw in fields[1:]:
        if not raw:
            break  # the conflicted files end with an empty field; messages follow
        info, _, path = os.fsdecode(raw).partition("\t")
        mode, blob, stage = info.split()
        stages.setdefault(path, {})[int(stage)] = (mode, blob)
    return tree, stages


def _decided_by_purges(git: Git, base: str | None, head: str, theirs: str) -> dict[str, str]:
    """{path: the commit whose version of it stands} for the paths of a purge one side
    made since the merge base ``base`` (ours when both did)."""
    decided: dict[str, str] = {}
    for side, other in ((theirs, head), (head, theirs)):
        for purge in purges.fresh(git, side, base):
            # and the copies the other side archived meanwhile (x--2): the purge takes them
            decided.update(
                dict.fromkeys([*purge.specs, *purges.copies_in(git, other, purge)], side)
            )
    return decided


def _under(path: str, specs: dict[str, str]) -> bool:
    return any(path == spec or path.startswith(spec + "/") for spec in specs)


def _amend_tree(
    git: Git,
    index: Path,
    tree: str,
    stages: dict[str, dict[int, tuple[str, str]]],
    fixed: dict[str, str],
    aside: dict[str, bytes],
    decided: dict[str, str],
) -> str:
    """``tree`` with each settled path's blob, each conflict file, and each purged path as
    the side that purged has it."""
    env = {"GIT_INDEX_FILE": str(index)}  # a scratch index: the repository's stays as is
    git.run("read-tree", tree, env=env)
    lines = []
    for spec, side in decided.items():
        # -f: the scratch index differs from HEAD and the work tree, which plain rm refuses
        git.run("rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", spec, env=env)
        kept = os.fsdecode(git.run("ls-tree", "-r", "-z", side, "--", spec))  # --index-info's
        lines += [record for record in kept.split("\0") if record]
    for path, blob in fixed.items():
        mode = (stages[path].get(2) or stages[path].get(3) or ("100644", ""))[0]
        lines.append(f"{mode} {blob}\t{path}")
    for path, data in aside.items():
        blob = git.run("hash-object", "-w", "--stdin", input=data).decode().strip()
        lines.append(f"100644 {blob}\t{path}")
    listed = os.fsencode("".join(line + "\0" for line in lines))
    git.run("update-index", "-z", "--index-info", input=listed, env=env)
    return git.text("write-tree", env=env).strip()


def _broken(committer: Committer, path: str) -> bool:
    target = committer.layout.root / PurePosixPath(path)
    if not target.is_file() or committer.layout.classify(target) is None:
        return False
    try:
        committer.memories.read_path(target)
    except (OSError, SomnidError):  # BrokenFile above all
        return True
    return False


def _beside_kept(committer: Committer, head: str | None, new: str, kept: set[str]) -> list[str]:
    """The merge's version of each file history leaves out (``kept``: a person's edit that
    does not parse yet, a file too large to commit; left as it is), put beside it as a
    conflict: theirs would be lost once the person's file is committed over it (caller
    holds the store's lock)."""
    if not kept:
        return []
    theirs = [
        (blob, path)
        for mode, blob, path in _changes(committer.git, head, new)
        if path in kept and mode in _REGULAR
    ]
    blobs = _blobs(committer.git, [blob for blob, _ in theirs])
    aside = []
    for blob, path in theirs:
        beside = conflict_path(path, new)
        committer.memories.put_raw(committer.layout.root / PurePosixPath(beside), blobs[blob])
        aside.append(beside)
    return aside


def _commit_local(committer: Committer) -> tuple[str | None, set[str]]:
    """Commit what was written since the last commit; HEAD after it. What history leaves
    out (a file a person is editing that does not parse yet, a file over its size limit,
    one that is no regular file) is not in HEAD, and the merge never writes over it: the
    second value."""
    dirty = [path for path in committer.changed_paths() if path.startswith(APPLIED)]
    kept = {path for path in dirty if committer.kept_out(path) or _broken(committer, path)}
    if len(kept) < len(dirty):
        whole = [path for path in dirty if path not in kept]
        committer.commit_paths(whole, "Local changes before a sync", SYNC)
    # Only what is on disk is a person's to keep: a link git holds and a sync never wrote
    # is not, and a regular file the other side puts in its place is written.
    root = committer.layout.root
    return _head(committer.git), {path for path in kept if os.path.lexists(root / path)}


Plan = list[tuple[str, str, str]]
"""(mode, blob, path) of each memory file a merge changes; mode ``000000``: removed."""


def _plan(committer: Committer, head: str | None, new: str, keep: set[str]) -> Plan:
    """What differs between ``head`` and ``new`` under memory/ and skills/ (but ``keep``:
    a person's edit in progress)."""
    return [
        (mode, blob, path)
        for mode, blob, path in _changes(committer.git, head, new)
        if path.startswith(APPLIED) and not path.startswith(SKIPPED) and path not in keep
    ]


def _written_since(committer: Committer, head: str | None, plan: Plan) -> bool:
    """Whether a file the merge would write no longer holds what ``head`` has (a write
    landed after the local changes were committed)."""
    if not plan:
        return False
    held: dict[str, str] = {}
    if head is not None:
        out = os.fsdecode(committer.git.run("ls-tree", "-r", "-z", head))
        for record in filter(None, out.split("\0")):
            info, _, path = record.partition("\t")
            held[path] = info.split()[2]
    for _mode, _blob, path in plan:
        target = committer.layout.root / PurePosixPath(path)
        try:
            data: bytes | None = target.read_bytes()
        except FileNotFoundError:
            data = None
        except OSError:
            return True
        if _blob_id(data) != held.get(path):
            return True
    return False


def _blob_id(data: bytes | None) -> str | None:
    if data is None:
        return None
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _apply(committer: Committer, plan: Plan) -> list[str]:
    """Put each file of ``plan`` in place, through the store (caller holds its lock)."""
    git, layout = committer.git, committer.layout
    blobs = _blobs(git, [blob for mode, blob, _ in plan if mode in _REGULAR])
    changed = []
    # Entry files last: an entry's folder is whole before its file makes it an entry. But
    # first a removal whose path a write spells in another case (casey/ for Casey/): on a
    # case-insensitive file system both are one file, and the removal would take the write.
    written = {folded(path) for mode, _, path in plan if mode != _GONE}
    for mode, blob, path in sorted(
        plan,
        key=lambda c: (
            not (c[0] == _GONE and folded(c[2]) in written),
            PurePosixPath(c[2]).name in FOLDER_FILES,
        ),
    ):
        target = layout.root / PurePosixPath(path)
        if mode == _GONE:
            own_folder = layout.classify(target) is not None and target.name in FOLDER_FILES
            committer.memories.put_raw(target, None, prune_folder=own_folder)
        elif mode in _REGULAR:  # a skill's script stays executable (100755)
            committer.memories.put_raw(target, blobs[blob], executable=mode == "100755")
        else:
            continue  # a link or a submodule: never written into the data dir
        changed.append(path)
    return changed


def _changes(git: Git, head: str | None, new: str) -> list[tuple[str, str, str]]:
    """(new mode, new blob, path) of every file ``new`` changes from ``head``; mode
    ``000000`` for a file it removes."""
    if head is None:
        out = os.fsdecode(git.run("ls-tree", "-r", "-z", new))
        found = []
        for record in filter(None, out.split("\0")):
            info, _, path = record.partition("\t")
            mode, _kind, blob = info.split()
            found.append((mode, blob, path))
        return found
    out = os.fsdecode(git.run("diff-tree", "-r", "-z", "--no-renames", "--raw", head, new))
    fields = [f for f in out.split("\0") if f]
    found = []
    for info, path in zip(fields[::2], fields[1::2], strict=True):
        _old_mode, mode, _old, blob, _status = info.lstrip(":").split()
        found.append((mode, blob, path))
    return found


def _blobs(git: Git, ids: list[str]) -> dict[str, bytes]:
    """The contents of ``ids``, read by one ``git cat-file --batch``."""
    if not ids:
        return {}
    out = git.run("cat-file", "--batch", input="".join(f"{i}\n" for i in ids).encode())
    found, at = {}, 0
    while at < len(out):
        end = out.index(b"\n", at)
        blob, _kind, size = out[at:end].decode().split()
        start = end + 1
        found[blob] = out[start : start + int(size)]
        at = start + int(size) + 1
    return found
