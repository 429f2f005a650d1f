"""Identity changes for review: the commits that changed a profile (``memory/about_me.md``,
the users' ``memory/users/<id>/about_user.md``, the legacy ``memory/about_user.md``), each
with its profile diffs and, per profile, the commit that reverted it if one did.

What a dream writes into a profile is shown under "Who is speaking" in every prompt: a line
a poisoned conversation slipped past the identity gate (dream/profile_gate.py) must be easy
to see and to undo. Blocking (git runs as a child process).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from somnid.history import log as history_log
from somnid.history.git import Git
from somnid.store.layout import Layout

PROFILES = ["memory/about_me.md", "memory/about_user.md", "memory/users"]


@dataclass(slots=True)
class IdentityChange:
    commit: history_log.Commit
    diffs: list[history_log.EntryDiff]
    reverted_by: dict[str, str] = field(default_factory=dict)
    """Per profile file of this commit: the commit that reverted it, if one did."""


def identity_log(
    git: Git, layout: Layout, *, offset: int, limit: int, dreams: bool
) -> tuple[list[IdentityChange], int]:
    """A page of the commits that changed a profile, newest first (``dreams``: the
    dreams' only), each with its profile diffs."""
    page, total = history_log.entry_log(
        git, layout, PROFILES, offset=offset, limit=limit, dreams=dreams
    )
    reverts = _reverts(git) if page else {}
    return [
        IdentityChange(
            info,
            diffs,
            {
                diff.change.path: reverts[(info.id, diff.change.path)]
                for diff in diffs
                if (info.id, diff.change.path) in reverts
            },
        )
        for info, diffs in page
    ], total


def _reverts(git: Git) -> dict[tuple[str, str], str]:
    """(reverted commit, profile path) -> the commit that put that path back."""
    out = git.text(
        "log", "--format=%x1e%H%x1f%(trailers:key=Reverts,valueonly,separator=%x1f)%x1d",
        "--name-only", "--no-renames", "--grep=^Reverts: ", "HEAD", "--", *PROFILES,
    )  # fmt: skip
    found: dict[tuple[str, str], str] = {}
    for record in out.split("\x1e")[1:]:
        head, _, files = record.partition("\x1d")
        sha, *reverted = head.split("\x1f")
        for target in (value.strip() for value in reverted if value.strip()):
            for path in files.split():
                if history_log.under(path, PROFILES):
                    found.setdefault((target, path), sha)  # newest first: the last revert
    return found
