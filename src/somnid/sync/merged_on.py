"""Which machine's merge set a conflict file aside: the first commit that added it.

A later merge adds it too (against its first parent), on either machine, so the newest
commit adding it named the wrong machine; and an archive or a restore moves it with its
entry (``kites`` to ``archived/kites--2``) in a commit that adds it anew. The commits read
are only those after the one the conflict's name holds (the whole history took a second a
conflict at 20,000 commits).
"""

from __future__ import annotations

import os
import re
from pathlib import PurePosixPath

from somnid.history.git import Git
from somnid.sync.merging import MERGED_ON

_COMMIT_ID = re.compile("[0-9a-f]{12}")
_MERGED_ON = re.compile("^" + re.escape(MERGED_ON) + r"([^\s:]+)")
_COPY = re.compile(r"--\d+$")  # an archived copy's folder: kites--2


def merged_on(git: Git, rel: str, named: str) -> str | None:
    """The machine whose merge set ``rel`` (relative to the data dir) aside, None when no
    merge's subject names one. ``named``: what the file's name holds after the conflict
    mark (the commit it came from)."""
    bound: list[str] = []
    if _COMMIT_ID.fullmatch(named[:12]):
        since = git.call("rev-parse", "--verify", "-q", f"{named[:12]}^{{commit}}")
        if since.returncode == 0:
            bound = [f"{since.stdout.decode().strip()}..HEAD"]
    said = git.call("log", "-m", "--diff-filter=A", "--format=%s", *bound, "--", rel)
    added = said.stdout.decode("utf-8", "replace").splitlines()
    if not added or not _MERGED_ON.search(added[-1]):  # moved with its entry since?
        added = _added_by_name(git, rel, bound) or added
    found = _MERGED_ON.search(added[-1]) if added else None
    return found[1] if found else None


def _added_by_name(git: Git, rel: str, bound: list[str]) -> list[str]:
    """The subjects of the commits (newest first) that added a file of ``rel``'s name in a
    folder of its entry's name, wherever: by name, not content (git's ``--follow`` took the
    conflict file for a copy of its entry file and followed that)."""
    path = PurePosixPath(rel)
    folder = _COPY.sub("", path.parent.name)
    said = git.call(
        "log", "-m", "-z", "--diff-filter=A", "--name-only", "--format=%x01%s", *bound,
        "--", path.parts[0],
    )  # fmt: skip
    subjects = []
    for record in said.stdout.split(b"\x01")[1:]:
        subject, _, names = record.partition(b"\0")
        for name in names.lstrip(b"\n").split(b"\0"):
            found = PurePosixPath(os.fsdecode(name))
            if found.name == path.name and _COPY.sub("", found.parent.name) == folder:
                subjects.append(subject.decode("utf-8", "replace"))
                break
    return subjects
