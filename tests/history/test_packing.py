"""somnid packs its repository's loose objects when git's own measure says it is due: its
repositories set gc.auto 0 (git never packs in the middle of a commit), and nothing else
packed (a probe: 212 MB in 38,821 loose files after fifteen minutes of edits)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.provenance import Actor, acting
from somnid.runtime import Runtime
from tests.conftest import START
from tests.history.helpers import git
from tests.history.test_hand_or_write import settings_of


def loose(data: Path) -> int:
    counted = dict(
        line.split(": ") for line in git(data, "count-objects", "-v").splitlines() if ": " in line
    )
    return int(counted["count"])


def reachable_loose_objects(data: Path, scratch: Path, count: int) -> None:
    """``count`` blobs written loose, reachable from a ref of their own (what many commits'
    objects are: gc packs only what is reachable)."""
    scratch.mkdir()
    for number in range(count):
        (scratch / f"b{number}").write_text(f"loose object {number}\n")
    names = "".join(f"{scratch}/b{number}\n" for number in range(count))
    hashes = git_input(data, names, "hash-object", "-w", "--stdin-paths").split()
    env = {"GIT_INDEX_FILE": str(scratch / "index")}
    listing = "".join(f"100644 {h}\tjunk/b{n}\n" for n, h in enumerate(hashes))
    git_input(data, listing, "update-index", "--add", "--index-info", env=env)
    tree = git_input(data, "", "write-tree", env=env).strip()
    commit = git_input(data, "", "commit-tree", tree, "-m", "junk").strip()
    git_input(data, "", "update-ref", "refs/test/junk", commit)


def git_input(data: Path, given: str, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(
        ["git", "-C", str(data), *args], input=given, text=True, capture_output=True,
        check=True, env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                         "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t", **(env or {})},
    ).stdout  # fmt: skip


async def test_a_repository_past_git_s_measure_is_packed(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        assert rt.history.committer is not None
        await rt.history.committer.flush()
    await asyncio.to_thread(reachable_loose_objects, data, tmp_path / "objects", 7000)
    assert loose(data) > 6700
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        with acting(Actor("api", "POST /v1/memories/knowledge")):
            await rt.memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        await committer.flush()  # the daemon's first commit: packing is looked at
    assert loose(data) < 1000
    assert "knowledge/vpn" in git(data, "log", "-1", "--name-only", "--format=")
