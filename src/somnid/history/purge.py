"""Forget for real: remove an entry's files and, on request, every past version of them.

The history rewrite is plain git plumbing: from the first commit that touched the entry
on, each commit is rebuilt with the same author, dates and message and a tree without the
entry's paths (a commit left with no change is dropped); the branch moves to the new tip,
the reflog is expired and unreachable objects are pruned, so no blob of the entry stays in
``.git``. Blocking; the caller holds the committer's lock.
"""

from __future__ import annotations

import os
import tempfile

from somnid.history.git import BRANCH, Git
from somnid.memory.kinds import Kind
from somnid.store.layout import Layout

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def entry_specs(layout: Layout, kind: Kind, name: str) -> list[str]:
    """The paths an entry may occupy, live and archived: its folder, or a profile's file."""
    if kind is Kind.PROFILE:
        return [str(layout.relative(layout.entry_file(kind, name)))]
    return [
        str(layout.relative(layout.entry_folder(kind, name))),
        str(layout.relative(layout.entry_folder(kind, name, archived=True))),
    ]


def in_history(git: Git, specs: list[str]) -> bool:
    if not git.has_head():
        return False
    return bool(git.text("rev-list", "-1", "HEAD", "--", *specs).strip())


def rewrite(git: Git, specs: list[str]) -> int:
    """Drop ``specs`` from every commit; how many commits were rebuilt."""
    if not in_history(git, specs):
        return 0
    order = git.text("rev-list", "--reverse", "--topo-order", "HEAD").split()
    touching = set(git.text("rev-list", "HEAD", "--", *specs).split())
    first = next(i for i, sha in enumerate(order) if sha in touching)
    parent = git.text("rev-parse", f"{order[first]}^").strip() if first else None
    parent_tree = git.text("rev-parse", f"{parent}^{{tree}}").strip() if parent else EMPTY_TREE
    rebuilt = 0
    with tempfile.TemporaryDirectory(prefix="somnid-purge-") as scratch:
        index = {"GIT_INDEX_FILE": os.path.join(scratch, "index")}
        for sha in order[first:]:
            git.run("read-tree", sha, env=index)
            git.run("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *specs, env=index)
            tree = git.text("write-tree", env=index).strip()
            if tree == parent_tree:
                continue  # it changed nothing but the purged entry
            parent = _recommit(git, sha, tree, parent)
            parent_tree = tree
            rebuilt += 1
    old = git.text("rev-parse", "HEAD").strip()
    if parent is None:  # every commit was only the entry: an empty history
        git.run("update-ref", "-d", f"refs/heads/{BRANCH}", old)
    else:
        git.run("update-ref", f"refs/heads/{BRANCH}", parent, old)
    git.run("read-tree", *(["HEAD"] if parent else ["--empty"]))
    git.run("reflog", "expire", "--expire=now", "--all")
    git.run("gc", "-q", "--prune=now")
    return rebuilt


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
