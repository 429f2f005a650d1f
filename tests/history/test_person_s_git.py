"""somnid's git beside a person's: its background reads take no lock a person's git needs."""

from __future__ import annotations

import os
from pathlib import Path

from somnid.history.git import Git
from tests.history.helpers import git


def test_a_status_of_somnid_s_never_takes_the_index_lock(tmp_path: Path) -> None:
    """A review: somnid's sweep ran ``git status`` every batch window, and status refreshes
    the index on the side under ``index.lock``: a person's ``git add``, ``stash`` or
    ``checkout`` at that moment failed with "index.lock: File exists". A status that may
    refresh (a file whose time moved, its content the same) leaves the index as it was."""
    repo = Git(tmp_path)
    repo.open()
    entry = tmp_path / "memory/knowledge/tea/SKILL.md"
    entry.parent.mkdir(parents=True)
    entry.write_text("---\ndescription: d\n---\ntea\n")
    git(tmp_path, "add", "-A", "memory")
    git(tmp_path, "-c", "user.name=Ann", "-c", "user.email=a@b", "commit", "-q", "-m", "tea")
    index = tmp_path / ".git/index"
    before = index.stat().st_mtime_ns
    hour_later = entry.stat().st_mtime + 3600
    os.utime(entry, (hour_later, hour_later))  # stale in git's index: a refresh would write
    assert repo.run("status", "--porcelain=v1", "-z", "--", "memory") == b""
    assert index.stat().st_mtime_ns == before
    git(tmp_path, "status", "--porcelain")  # a person's status refreshes it: the test can fail
    assert index.stat().st_mtime_ns != before
