"""Forget for real: remove an entry's files and, on request, every past version of them.

The history rewrite is plain git plumbing: from the first commit that touched the entry
on, each commit is rebuilt with the same author, dates and message and a tree without the
entry's paths (a commit left with no change is dropped); the branch moves to the new tip,
the reflog is expired and unreachable objects are pruned, so no blob of the entry stays in
``.git``. Blocking; the caller holds the committer's lock (no commit lands meanwhile), and
reads of the history wait only for the last step (:mod:`somnid.history.gate`). A rewrite
costs one rebuild per commit from the first that touched the entry (five git runs, ~90 ms
each on a small machine: 3,000 commits took 261 s), so it measures one before it starts and
says how long it will take (:class:`Progress`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from somnid.errors import Conflict, SomnidError
from somnid.history.git import BRANCH, Git, GitError
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.memory.names import live_name
from somnid.provenance import Actor
from somnid.sessions.redact import Scrubbed
from somnid.store import frontmatter
from somnid.store.atomic import folder_missing
from somnid.store.layout import Layout

log = logging.getLogger(__name__)
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
OWN_REFS = ("refs/somnid-sync/remote",)
"""Refs somnid itself keeps beside its branch (sync's copy of the remote's)."""
_REF = f"refs/heads/{BRANCH}"
_STASH = "refs/stash"
MOVE_TRIES = 20
"""Rounds to move the branch while a person commits onto it; then the purge gives up."""


@dataclass(frozen=True, slots=True)
class Purged:
    kind: str
    name: str
    removed: list[str]
    history: bool
    rewritten: int
    commit: str | None
    estimated_s: float | None = None
    seconds: float = 0.0
    scrubbed: list[Scrubbed] = field(default_factory=list)
    """Session logs the purged text was scrubbed from (on request)."""
    dropped: int = 0
    """Commits of the rewrite that changed nothing but the entry: gone, not rebuilt."""

    def record(
        self, at: str, scrub_logs: bool, scrub_error: str | None, by: Actor
    ) -> dict[str, Any]:
        """The purge's line in the audit log."""
        return {
            "at": at, "action": "purge", "kind": self.kind, "name": self.name,
            "paths": self.removed, "history": self.history,
            "rewritten_commits": self.rewritten, "dropped_commits": self.dropped,
            "estimated_seconds": self.estimated_s, "seconds": self.seconds,
            "scrub_logs": scrub_logs, "scrubbed_logs": [str(item.path) for item in self.scrubbed],
            "scrubbed_count": sum(item.replaced for item in self.scrubbed),
            "scrub_error": scrub_error, "by": by.name, "agent": by.agent, "session": by.session,
        }  # fmt: skip


def committable(git: Git, gone: Path | None) -> None:
    """GitError before anything is deleted when git could not take the purge's commit:
    another git holds the repository's index, HEAD or branch (or a killed one left its
    lock), or ``gone``, memory/ or skills/, is away (nothing is committed meanwhile). A
    purge that deleted first answered 503, left no audit line, and its removal was later
    committed as a hand edit."""
    if gone is not None:
        raise GitError(folder_missing(gone).detail, code="folder_missing")
    for lock in ("index.lock", "HEAD.lock", f"refs/heads/{BRANCH}.lock"):
        if (git.git_dir / lock).exists():
            raise GitError(
                f"git's {lock} is held (another git runs, or one was killed and left it; "
                f"remove {git.git_dir / lock} if none runs): nothing was purged"
            )


def entry_specs(layout: Layout, kind: Kind, name: str) -> list[str]:
    """The paths an entry may occupy, live and archived: its folder, or a profile's file."""
    if kind is Kind.PROFILE:
        return [str(layout.relative(layout.entry_file(kind, name)))]
    return [
        str(layout.relative(layout.entry_folder(kind, name))),
        str(layout.relative(layout.entry_folder(kind, name, archived=True))),
    ]


def archived_copies(
    layout: Layout, kind: Kind, name: str, found: Iterable[Entry], broken: Iterable[str]
) -> list[str]:
    """The archive names of an entry's other archived copies, purged with it: archived again
    under ``name--2``, ``name--3``… (``archived_from: name``, among the entries ``found``);
    and, for a copy that does not parse (a path among ``broken``), its folder's name."""
    copies = [
        entry.name
        for entry in found
        if entry.archived and entry.name != name and entry.text_field("archived_from") == name
    ]
    archive = layout.relative(layout.archive_dir(kind)).as_posix() + "/"
    for path in broken:
        folder = path.removeprefix(archive).split("/")[0]
        mine = path.startswith(archive) and live_name(None, folder) == name
        if mine and folder not in (name, *copies):
            copies.append(folder)
    return copies


def in_history(git: Git, specs: list[str]) -> bool:
    if not git.has_head():
        return False
    # --full-history: a merge (sync) that kept one side's tree hides the other side's
    # commits from the default simplification, and with them an entry's past versions.
    return bool(git.text("rev-list", "-1", "--full-history", "HEAD", "--", *specs).strip())


@dataclass(slots=True)
class Progress:
    """A purge as it runs: what, how many commits its rewrite rebuilds, how far it is, and
    how long it should take (``GET /v1/history/purge``)."""

    kind: str
    name: str
    started_at: str
    history: bool
    commits: int = 0
    """Commits the rewrite goes through: the first that touched the entry and every later one."""
    done: int = 0
    per_commit_s: float | None = None
    """Measured before the rewrite starts (one commit's rebuild, timed), then from the
    commits done."""
    estimated_s: float | None = None
    """The estimate made up front: ``commits`` × the measured cost of one."""
    phase: Literal["starting", "rewriting", "pruning", "finishing"] = "starting"
    started: float = field(default_factory=time.monotonic)
    _loop: float | None = None

    def remaining_s(self) -> float | None:
        if self.per_commit_s is None:
            return None
        if self.done and self._loop is not None:
            self.per_commit_s = (time.monotonic() - self._loop) / self.done
        return max(0, self.commits - self.done) * self.per_commit_s

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started


def _plan(git: Git, specs: list[str]) -> tuple[list[str], int] | None:
    """Every commit of the branch, oldest first, and the index of the first that touched
    ``specs``."""
    if not in_history(git, specs):
        return None
    if git.call("symbolic-ref", "-q", "HEAD").stdout.decode().strip() != _REF:
        raise GitError(f"a purge rewrites {BRANCH}, and another branch is checked out: run "
                       f"`git checkout {BRANCH}` in the data dir; nothing was purged")  # fmt: skip
    order = git.text("rev-list", "--reverse", "--topo-order", _REF).split()
    touching = set(git.text("rev-list", "--full-history", _REF, "--", *specs).split())
    return order, next(i for i, sha in enumerate(order) if sha in touching)


def rewrite(
    git: Git,
    specs: list[str],
    progress: Progress | None = None,
    pruning: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
) -> int:
    """Drop ``specs`` from every commit; how many commits were rebuilt. ``progress`` is
    kept up to date; ``pruning`` is held for the last step only (the branch moved, the
    reflog expired, unreachable objects pruned): reads of the repository need to wait for
    that step alone. A commit a person made meanwhile is rebuilt too, never dropped."""
    progress = progress or Progress("", "", "", True)
    found = _plan(git, specs)
    if found is None:
        return 0
    order, first = found
    progress.commits = len(order) - first
    parent = git.text("rev-parse", f"{order[first]}^").strip() if first else None
    parent_tree = git.text("rev-parse", f"{parent}^{{tree}}").strip() if parent else EMPTY_TREE
    with tempfile.TemporaryDirectory(prefix="somnid-purge-") as scratch:
        index = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        progress.per_commit_s = _calibrate(git, order[first], specs, index)
        progress.estimated_s = progress.commits * progress.per_commit_s
        log.info(
            "purge: rewriting %d commits, about %.0f s", progress.commits, progress.estimated_s
        )
        progress.phase, progress._loop = "rewriting", time.monotonic()
        built = _Rebuilt(parent, parent_tree)
        built.add(git, order[first:], specs, index, progress)
        progress.phase = "pruning"
        with pruning():
            _move_branch(git, built, order[-1], specs, index, progress)
            # The branch has moved: what is left must run whatever happens, or the old
            # versions stay reachable (a reflog) and a second purge finds no entry to purge.
            # The index follows the rewritten branch, if it is the one checked out (another
            # branch's index is the person's).
            if git.call("symbolic-ref", "-q", "HEAD").stdout.decode().strip() == _REF:
                read = git.call("read-tree", *(["HEAD"] if built.parent else ["--empty"]))
                if read.returncode:  # a person's git holds the index
                    said = read.stderr.decode()[-200:]
                    log.warning("purge: the index was not reread: %s", said)
            _drop_other_refs(git, order[first])
            _expire_reflogs(git)
            git.run("gc", "-q", "--prune=now")
        kept = foreign_refs(git, specs)
        if kept:  # made meanwhile, or a purge received by sync: the past stays in them
            log.warning(
                "purge: %s still hold past versions of %s (a person's refs: never deleted)",
                ", ".join(kept), " ".join(specs),
            )  # fmt: skip
    progress.phase = "finishing"
    return built.count


def _move_branch(
    git: Git,
    built: _Rebuilt,
    rewritten: str,
    specs: list[str],
    index: dict[str, str],
    progress: Progress,
) -> None:
    """Move the branch from ``rewritten`` (its tip the rewrite went through) to the rewrite,
    rebuilding first the commits a person added on top meanwhile; never over anything else
    (the branch reset, amended, its lock held by another git: GitError, nothing moved)."""
    for _ in range(MOVE_TRIES):
        waiting = git.under_way()  # a person's merge or rebase: its index is theirs
        if waiting is not None:
            raise GitError(f"{waiting}: nothing was purged from history; purge again after")
        tip = git.text("rev-parse", "--verify", "-q", _REF).strip()
        if tip != rewritten:
            if not tip or git.call("merge-base", "--is-ancestor", rewritten, tip).returncode:
                raise GitError(
                    f"{BRANCH} was reset or rewritten while the purge ran: nothing was "
                    "purged from history; purge again"
                )
            later = git.text("rev-list", "--reverse", "--topo-order", f"{rewritten}..{tip}")
            built.add(git, later.split(), specs, index, progress)  # a person's commits
            rewritten = tip
            continue
        moved = (
            ["update-ref", _REF, built.parent, tip]
            if built.parent
            else ["update-ref", "-d", _REF, tip]
        )
        done = git.call(*moved)
        if done.returncode == 0:
            return
        if git.text("rev-parse", "--verify", "-q", _REF).strip() == tip:  # a lock, not a move
            said = done.stderr.decode("utf-8", "replace").strip()[-300:]
            raise GitError(f"could not move {BRANCH}: {said}; nothing was purged from history")
    raise GitError(f"{BRANCH} kept moving while the purge ran: nothing was purged from history")


def _expire_reflogs(git: Git) -> None:
    """Forget every ref's past positions (they keep old versions reachable), but the stash's:
    its older entries are a person's saved work (the purge checked none holds the entry)."""
    listed = git.text("for-each-ref", "--format=%(refname)").split()
    # Only refs that keep a log (git refuses the whole call for one without: sync's own ref).
    refs = [r for r in listed if r != _STASH and git.call("reflog", "exists", r).returncode == 0]
    head = ["HEAD"] if git.call("reflog", "exists", "HEAD").returncode == 0 else []
    if head or refs:
        git.run("reflog", "expire", "--expire=now", *head, *refs)


@dataclass(slots=True)
class _Rebuilt:
    """The rewrite so far: the last commit it made (None: none yet) and that commit's tree."""

    parent: str | None
    tree: str
    count: int = 0

    def add(
        self,
        git: Git,
        commits: list[str],
        specs: list[str],
        index: dict[str, str],
        progress: Progress,
    ) -> None:
        """Rebuild ``commits`` (oldest first) without ``specs`` onto the last one made."""
        for sha in commits:
            tree = _tree_without(git, sha, specs, index)
            if tree != self.tree:  # else it changed nothing but the purged entry: dropped
                self.parent = _recommit(git, sha, tree, self.parent)
                self.tree = tree
                self.count += 1
            progress.done += 1


def foreign_refs(git: Git, specs: list[str]) -> list[str]:
    """The refs of a person's (their branches, tags, stash entries; not somnid's branch nor
    its sync's) that reach a version of ``specs``: a purge with history would have to delete
    them, and with them whatever else they hold (a branch's own entries, a stashed edit)."""
    found = []
    listed = git.text("for-each-ref", "--format=%(refname) %(symref)").splitlines()
    for ref, _, alias in (line.partition(" ") for line in listed):
        if ref == _REF or ref in OWN_REFS or alias:  # an alias names a ref listed itself
            continue
        # Every stash entry, not its newest alone: the older ones live in its reflog.
        tips = git.text("log", "-g", "--format=%H", ref).split() if ref == _STASH else [ref]
        for at, tip in enumerate(tips):
            peeled = git.call("cat-file", "-t", f"{tip}^{{}}").stdout.decode().strip()
            if peeled != "commit":  # a tag of a tree or a blob: what it holds is not told
                found.append(f"{ref} (a {peeled or 'missing object'})")
                continue
            done = git.call("rev-list", "-1", "--full-history", tip, "--", *specs)
            if done.returncode == 0 and done.stdout.strip():
                found.append(f"stash@{{{at}}}" if ref == _STASH else ref)
    worktrees = git.text("worktree", "list", "--porcelain").count("worktree ")
    if worktrees > 1:  # each keeps its own HEAD (and reflog), which no ref lists
        found.append(f"{worktrees - 1} other worktree(s) (git worktree list)")
    return found


def copies_in_history(git: Git, layout: Layout, kind: Kind, name: str) -> list[str]:
    """The archive folders that held, at some commit, a copy of ``name`` archived under
    another name (``name--2``, ``archived_from: name``), gone from disk since (a purge of
    the copies alone, without history): a purge with history takes their past too."""
    if not kind.archivable:
        return []
    archive = str(layout.relative(layout.archive_dir(kind)))
    file_name = layout.file_name(kind)
    listed = git.text(
        "log", "--all", "--full-history", "--format=", "--name-only", "--", archive
    ).split("\n")
    copy = re.compile(rf"{re.escape(archive)}/{re.escape(name)}--\d+/{re.escape(file_name)}")
    found = []
    for path in sorted({p for p in listed if copy.fullmatch(p)}):
        if (layout.root / path).exists():  # on disk: a copy is in the purge already, else
            continue  # another entry's (a name may hold "--2"), never rewritten away
        for commit in git.text("log", "--all", "--full-history", "--format=%H", "--", path).split():
            blob = git.call("cat-file", "blob", f"{commit}:{path}")
            if blob.returncode == 0 and _says_archived_from(blob.stdout, name):
                found.append(path.rsplit("/", 1)[0])
                break
    return found


def _says_archived_from(data: bytes, name: str) -> bool:
    try:
        return str(frontmatter.parse(data.decode("utf-8")).meta.get("archived_from")) == name
    except (UnicodeDecodeError, SomnidError):
        return False


def check_no_foreign_refs(git: Git, specs: list[str]) -> None:
    """Conflict, before anything is deleted, when a person's ref holds the entry's past."""
    refs = foreign_refs(git, specs)
    if refs:
        named = ", ".join(ref.removeprefix("refs/") for ref in refs[:5])
        more = f" and {len(refs) - 5} more" if len(refs) > 5 else ""
        raise Conflict(
            f"a purge with history would delete your git refs that hold this entry's past "
            f"versions ({named}{more}), and everything else they hold: remove the entry "
            "from them, or delete them (git branch -D, git tag -d, git stash drop, git "
            "worktree remove), then purge again; or purge without history. Nothing was purged"
        )


def _drop_other_refs(git: Git, first: str) -> None:
    """Delete somnid's own refs that still reach ``first`` (the oldest commit that held the
    entry): sync's last fetch of the remote, say, kept every old version reachable from
    ``.git`` until its next round, and for good with the remote down. That ref is made
    again by the next fetch. A person's refs are never deleted (the purge refused them)."""
    for ref in git.text("for-each-ref", "--format=%(refname)").split():
        if ref not in OWN_REFS:
            continue
        if git.call("merge-base", "--is-ancestor", first, ref).returncode == 0:
            git.run("update-ref", "-d", ref)


def _tree_without(git: Git, sha: str, specs: list[str], index: dict[str, str]) -> str:
    git.run("read-tree", sha, env=index)
    # -f: a scratch index; a file on disk that differs from it (a person's) is no reason
    git.run("rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", *specs, env=index)
    return git.text("write-tree", env=index).strip()


def _calibrate(git: Git, sha: str, specs: list[str], index: dict[str, str]) -> float:
    """One commit's rebuild, timed: its tree without ``specs`` and the read of its
    fields (four of the five git runs of a commit; the fifth, commit-tree, costs alike)."""
    began = time.monotonic()
    _tree_without(git, sha, specs, index)
    git.text("log", "-1", "--format=%an%x00%B", sha)
    return (time.monotonic() - began) * 5 / 4


def _recommit(git: Git, sha: str, tree: str, parent: str | None) -> str:
    fields = git.text("log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B", sha)
    an, ae, ad, cn, ce, cd, message = fields.split("\x00", 6)
    env = {
        "GIT_AUTHOR_NAME": an,
        "GIT_AUTHOR_EMAIL": ae,
        "GIT_AUTHOR_DATE": ad,
        "GIT_COMMITTER_NAME": cn,
        "GIT_COMMITTER_EMAIL": ce,
        "GIT_COMMITTER_DATE": cd,
    }
    args = ["commit-tree", tree, *(["-p", parent] if parent else [])]
    return git.run(*args, input=message.encode("utf-8"), env=env).decode().strip()
