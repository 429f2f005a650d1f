"""An entry made and moved away (created, then archived) between the moment its write was
noted and the commit: ``commit --only`` refused the whole commit for its path ("did not
match any file"), that was read as "nothing to commit", and the batch's other files went
into the next sweep as hand edits (a probe's 8 writers saw every write of a burst
committed as "hand edit")."""

from __future__ import annotations

from pathlib import Path

from somnid.config import Settings
from somnid.history.committer import SOMNID
from somnid.history.messages import commit_message
from somnid.history.staging import commit_paths_only
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from tests.conftest import START
from tests.history.helpers import git


async def test_a_spec_gone_since_it_was_noted_does_not_void_the_commit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, timezone="UTC", embed={"provider": "off"})
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        await committer.flush()
        kept = await rt.memories.create(Kind.KNOWLEDGE, "kept", body="stays\n")
        gone = tmp_path / "moved-away"
        made = await rt.memories.create(Kind.KNOWLEDGE, "made", body="then moved\n")
        (data / made.path).parent.rename(gone)  # after its write was noted, before the commit
        text, env = commit_message("POST /v1/memories/knowledge: knowledge/kept", SOMNID)
        specs = ["memory/knowledge/made", "memory/knowledge/kept"]
        with committer.lock:
            assert commit_paths_only(committer.git, specs, text, env)
        head = git(data, "show", "--name-only", "--format=%an", "HEAD").split("\n")
        assert head[0] == SOMNID.name
        assert str(kept.path) in head and str(made.path) not in head
        # A deletion is still committed: a spec HEAD has, gone from the disk and the index.
        (data / kept.path).unlink()
        (data / kept.path).parent.rmdir()
        with committer.lock:
            assert commit_paths_only(committer.git, ["memory/knowledge/kept"], text, env)
        assert str(kept.path) not in git(data, "ls-tree", "-r", "--name-only", "HEAD")
