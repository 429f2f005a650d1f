"""Files written while somnid was down are committed at start however many there are: a
store of 100k files made the start commit's git arguments too long (E2BIG) and nothing was
committed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from somnid.config import Settings
from somnid.history.git import Git
from somnid.history.pathspecs import ON_COMMAND_LINE, with_folders, within
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from tests.conftest import START
from tests.history.helpers import git, subjects


def test_paths_within_folders() -> None:
    paths = ["memory/knowledge/a/SKILL.md", "memory/knowledge/ab/SKILL.md", "skills/x/SKILL.md"]
    assert within(paths, ["memory/knowledge/a", "skills/x/SKILL.md"]) == [
        "memory/knowledge/a/SKILL.md",
        "skills/x/SKILL.md",
    ]
    assert "memory/knowledge" in with_folders(paths)
    assert "memory/knowledge/a" in with_folders(paths)


async def test_many_files_written_while_down_are_committed_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    settings = Settings(data_dir=data, timezone="UTC", embed={"provider": "off"})
    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        entry = await rt.memories.create(Kind.KNOWLEDGE, "seed", body="a first fact\n")
        assert rt.history.committer is not None
        await rt.history.committer.flush()
    text = (data / entry.path).read_text(encoding="utf-8")
    count = ON_COMMAND_LINE + 50  # more than go on a command line
    for number in range(count):
        folder = data / "memory" / "knowledge" / f"fact-{number:04d}"
        folder.mkdir(parents=True)
        body = text.replace("seed", f"fact-{number:04d}").replace("a first fact", f"fact {number}")
        (folder / "SKILL.md").write_text(body, encoding="utf-8")

    broken = data / "memory" / "knowledge" / "half-written" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text("---\nname: [half\n", encoding="utf-8")  # does not parse: left out
    longest = [0]  # the most arguments git was given
    for method in ("run", "call"):
        original = getattr(Git, method)

        def counted(self: Git, *args: str, _original: Any = original, **kw: Any) -> Any:
            longest[0] = max(longest[0], len(args))
            return _original(self, *args, **kw)

        monkeypatch.setattr(Git, method, counted)

    async with Runtime.open(settings, clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        await committer.flush()
        assert committer.last_error is None

    assert longest[0] <= ON_COMMAND_LINE + 10  # 100k files would not fit on a command line
    newest = subjects(data)[0]
    assert newest.startswith("Changes not yet in history when somnid started"), newest
    assert f"and {count - 5} more" in newest, newest
    tracked = git(data, "ls-files", "memory/knowledge").splitlines()
    assert len([path for path in tracked if "/fact-" in path]) == count
    assert "memory/knowledge/half-written/SKILL.md" not in tracked
    assert (
        git(data, "status", "--porcelain", "--", "memory") == "?? memory/knowledge/half-written/\n"
    )
