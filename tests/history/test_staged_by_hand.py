"""somnid commits its own paths only: what a person staged in the data dir's repository
stays staged (a plain ``git commit`` took the whole index, so a person's ``git add``-ed file
went into somnid's commit under somnid's name, and their own commit found nothing)."""

from __future__ import annotations

from pathlib import Path

from somnid.config import Settings
from somnid.history.committer import HAND
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from tests.conftest import START
from tests.history.helpers import git


def settings_of(data: Path) -> Settings:
    return Settings(data_dir=data, timezone="UTC", embed={"provider": "off"})


async def test_a_file_staged_by_hand_stays_out_of_somnids_commits(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        first = await rt.memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        await committer.flush()
        (data / "notes-by-hand.txt").write_text("mine\n", encoding="utf-8")
        git(data, "add", "-f", "notes-by-hand.txt")
        await rt.memories.create(Kind.KNOWLEDGE, "dns", body="resolver 10.0.0.2\n")
        await committer.flush()
        head = git(data, "show", "--name-only", "--format=%s", "HEAD").split()
        assert "memory/knowledge/dns/SKILL.md" in head
        assert "notes-by-hand.txt" not in head
        assert str(first.path) not in head
        assert git(data, "diff", "--cached", "--name-only").split() == ["notes-by-hand.txt"]
        # Nothing of somnid's changed: no commit, and the person's staging is untouched.
        commits = git(data, "rev-list", "--count", "HEAD")
        with committer.lock:
            assert committer.commit_paths(["memory/knowledge/dns/SKILL.md"], "x", HAND) is None
        assert git(data, "rev-list", "--count", "HEAD") == commits
        assert git(data, "diff", "--cached", "--name-only").split() == ["notes-by-hand.txt"]
    git(data, "-c", "user.name=me", "-c", "user.email=me@localhost", "commit", "-qm", "mine")
    assert git(data, "show", "--name-only", "--format=%s", "HEAD").split() == [
        "mine",
        "notes-by-hand.txt",
    ]


async def test_a_deletion_left_staged_does_not_stop_history(tmp_path: Path) -> None:
    """A commit killed between its ``git add`` and its ``git commit`` leaves a deletion
    staged: the path is then neither in the work tree nor in the index, and a ``git add``
    naming it fails. Every later commit naming it failed, at start and after writes."""
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        for name in ("vpn", "dns", "ntp"):
            await rt.memories.create(Kind.KNOWLEDGE, name, body=f"{name} notes\n")
        assert rt.history.committer is not None
        await rt.history.committer.flush()
    # While stopped: vpn removed and its deletion staged, as a killed commit leaves it.
    (data / "memory/knowledge/vpn/SKILL.md").unlink()
    (data / "memory/knowledge/vpn").rmdir()
    git(data, "add", "-A", "--", "memory/knowledge/vpn")
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        await committer.flush()  # after the catch-up at start
        assert committer.last_error is None
        assert "memory/knowledge/vpn/SKILL.md" not in git(data, "ls-tree", "-r", "HEAD")
        # The same while running: dns archived, its old path's deletion staged by then.
        await rt.memories.archive(Kind.KNOWLEDGE, "dns")
        git(data, "add", "-A", "--", "memory/knowledge/dns")
        await committer.flush()
        assert committer.last_error is None
        tree = git(data, "ls-tree", "-r", "--name-only", "HEAD").split()
        assert "memory/knowledge/dns/SKILL.md" not in tree
        assert "memory/archived/dns/SKILL.md" in tree
        assert git(data, "status", "--porcelain") == ""
