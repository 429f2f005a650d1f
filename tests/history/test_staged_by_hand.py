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
