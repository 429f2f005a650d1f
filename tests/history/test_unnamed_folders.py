"""A folder whose name is not UTF-8 under memory/ (made by hand, copied from another
system): the file watcher stopped for as long as it was there (``watchfiles`` cannot give
its path to Python), so hand edits everywhere were neither indexed nor committed; and once
it was back, edits made meanwhile stayed out of history until another edit woke it."""

from __future__ import annotations

import os
from pathlib import Path

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.history.helpers import committed, git, history_client, wait_for
from tests.stores import written_by_hand


def test_a_folder_named_in_no_utf_8_stops_no_watch(data_dir: Path, clock: ManualClock) -> None:
    with history_client(data_dir, clock, 0.2) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "seen", "body": "zebra"})
        assert made.status_code == 201, made.text
        knowledge = data_dir / "memory/knowledge"
        os.mkdir(os.fsencode(knowledge) + b"/v\xffbad")
        wait_for(lambda: client.get("/v1/health").json()["index"]["status"] == "ok")
        wait_for(written_by_hand(knowledge, client))
        wait_for(lambda: "memory/knowledge/by-hand/SKILL.md" in committed(data_dir))
        health = client.get("/v1/health").json()
        assert health["index"]["status"] == "ok", health["index"]


def test_a_revert_of_a_commit_with_a_name_in_no_utf_8_is_refused(
    data_dir: Path, clock: ManualClock
) -> None:
    """Before, it answered 200 and put nothing back: the path read as text (U+FFFD for the
    byte) named no file."""
    with history_client(data_dir, clock, 0.2) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "seen", "body": "zebra"})
        assert made.status_code == 201, made.text
        folder = os.fsencode(data_dir / "memory/knowledge") + b"/v\xffbad"
        os.mkdir(folder)
        with open(folder + b"/SKILL.md", "w") as file:
            file.write("---\ndescription: typed by hand\n---\nokapi\n")
        wait_for(lambda: "bad/SKILL.md" in committed(data_dir))
        os.remove(folder + b"/SKILL.md")
        wait_for(lambda: "bad/SKILL.md" not in committed(data_dir))
        sha = git(data_dir, "log", "-1", "--format=%H").strip()
        before = git(data_dir, "rev-parse", "HEAD")
        refused = client.post(f"/v1/history/{sha}/revert")
        assert_problem(refused, 409, "name_not_utf8")
        assert "memory/knowledge/v\\xffbad/SKILL.md" in refused.json()["detail"]
        entry = client.post(f"/v1/history/entries/knowledge/seen/{sha}/revert")
        assert_problem(entry, 400, "invalid_input")  # not seen's change
        assert git(data_dir, "rev-parse", "HEAD") == before
        assert not os.path.exists(folder + b"/SKILL.md")
