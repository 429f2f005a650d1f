"""A folder whose name is not UTF-8 under memory/ (made by hand, copied from another
system): the file watcher stopped for as long as it was there (``watchfiles`` cannot give
its path to Python), so hand edits everywhere were neither indexed nor committed; and once
it was back, edits made meanwhile stayed out of history until another edit woke it."""

from __future__ import annotations

import os
from pathlib import Path

from somnid.memory.clock import ManualClock
from tests.history.helpers import git, history_client, wait_for


def test_a_folder_named_in_no_utf_8_stops_no_watch(data_dir: Path, clock: ManualClock) -> None:
    with history_client(data_dir, clock, 0.2) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "seen", "body": "zebra"})
        assert made.status_code == 201, made.text
        knowledge = data_dir / "memory/knowledge"
        os.mkdir(os.fsencode(knowledge) + b"/v\xffbad")
        wait_for(lambda: client.get("/v1/health").json()["index"]["status"] == "ok")
        hand = knowledge / "by-hand"
        hand.mkdir()
        (hand / "SKILL.md").write_text("---\ndescription: typed by hand\n---\nokapi\n")

        def found() -> bool:
            answer = client.post("/v1/recall", json={"query": "okapi"})
            return any(item["name"] == "by-hand" for item in answer.json()["items"])

        wait_for(found)
        wait_for(lambda: "memory/knowledge/by-hand/SKILL.md" in git(data_dir, "ls-files"))
        health = client.get("/v1/health").json()
        assert health["index"]["status"] == "ok", health["index"]
