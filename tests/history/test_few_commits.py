"""History keeps up with many writes: the writes of one writer (source, agent, session)
noted by one flush are one commit (concurrent requests on ten entries were a commit each,
and a history read or a purge waited minutes); each file's commits keep their order; a
write noted while a flush runs, and a new dream journal, are never taken for hand edits."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path

from somnid.history.noted import Noted, earliest, merged
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.provenance import Actor, acting
from somnid.runtime import Runtime
from tests.conftest import START
from tests.history.helpers import git, history_client, subjects
from tests.history.test_hand_or_write import settings_of


def test_one_writers_writes_of_a_flush_are_one_commit_in_file_order() -> None:
    api = [Actor("api", f"PATCH /v1/memories/knowledge/{n}", "agent-a") for n in "abc"]
    tool = Actor("tool", "add_intention", "agent-a")
    items = [
        Noted(api[0], {"a": None}),
        Noted(tool, {"i": None}),
        Noted(api[1], {"b": None}),  # joins the first: the tool touched other files
        Noted(tool, {"b": None}),
        Noted(api[2], {"b": None, "c": None}),  # after the tool's write of b: its own
    ]
    out = merged(items)
    assert [(item.actor.source, list(item.paths)) for item in out] == [
        ("api", ["a", "b"]),
        ("tool", ["i", "b"]),
        ("api", ["b", "c"]),
    ]
    assert out[0].names == [api[0].name, api[1].name]
    other_agent = Noted(Actor("api", "POST /v1/intentions", "agent-b"), {"x": None})
    assert len(merged([items[0], other_agent])) == 2  # another writer: its own commit


def test_many_requests_of_one_client_are_one_commit(data_dir: Path) -> None:
    # A window long enough that only the history read flushes: every write in one batch.
    with history_client(data_dir, ManualClock(START), 60.0) as client:
        for number in range(8):
            body = {"name": f"note-{number}", "body": f"v1 {number}\n"}
            assert client.post("/v1/memories/knowledge", json=body).status_code == 201
        for number in range(8):
            body = {"body": f"v2 {number}\n"}
            patched = client.patch(f"/v1/memories/knowledge/note-{number}", json=body)
            assert patched.status_code == 200
        items = client.get("/v1/history", params={"limit": 50}).json()["items"]
    made = subjects(data_dir)
    writes = [s for s in made if "knowledge/note" in s]
    assert len(writes) == 1, made
    assert writes[0].startswith("POST /v1/memories/knowledge, PATCH /v1/memories/knowledge/")
    assert "knowledge/note-0" in writes[0] and "and 3 more" in writes[0]
    assert git(data_dir, "show", "HEAD:memory/knowledge/note-7/SKILL.md").endswith("v2 7\n")
    assert len(items) >= 1


def test_uses_noted_by_many_sessions_reads_are_one_commit(data_dir: Path) -> None:
    # A probe: MCP clients send a session each, so each recall_memories call's use noted
    # was a commit of its own when the calls found different entries (370 commits a
    # minute); purges and shutdown waited for them.
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"]
    clock = ManualClock(START)
    with history_client(data_dir, clock, 60.0) as client:
        for word in words:
            body = {"name": word, "description": f"the {word} server", "body": "udp\n"}
            assert client.post("/v1/memories/knowledge", json=body).status_code == 201
        assert client.get("/v1/history").status_code == 200  # the creates: a commit before
        clock.advance(dt.timedelta(days=1))  # a use is a change once a day
        for number, word in enumerate(words):
            found = client.post(
                "/v1/tools/recall_memories",
                json={"args": {"query": f"{word} server", "limit": 1}, "sessionId": f"s-{number}"},
            )
            assert found.status_code == 200 and word in found.json()["result"], found.text
        assert client.get("/v1/history").status_code == 200  # flushes what is pending
    made = subjects(data_dir)
    uses = [s for s in made if s.startswith("recall_memories")]
    assert len(uses) == 1, made
    assert "knowledge/alpha" in uses[0] and "and 3 more" in uses[0], uses
    assert "last_used: 2026-10-04" in git(data_dir, "show", "HEAD:memory/knowledge/hotel/SKILL.md")


async def test_a_write_noted_while_a_flush_runs_is_not_a_hand_edit(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        memories, committer = rt.memories, rt.history.committer
        assert committer is not None
        await committer.flush()
        with acting(Actor("api", "POST /v1/memories/knowledge")):
            await memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        # The flush took its batch (empty) before the write was noted; its sweep for hand
        # edits runs now, with the write on disk and in the queue.
        await asyncio.to_thread(committer._commit, [], True, set())
        await committer.flush()
    made = subjects(data)
    assert not any(subject.startswith("Hand edit") for subject in made), made
    assert made[0] == "POST /v1/memories/knowledge: knowledge/vpn", made


async def test_a_new_dream_journal_is_left_to_its_dream(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        await committer.flush()
        journal = data / "memory/dream-log/2026-10-03_dream_001.md"
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_text("---\nstatus: deep_sleep\n---\n\nwritten, not yet handed over\n")
        committer.hand_edited()
        await committer.flush()
        assert "dream-log" not in git(data, "log", "--name-only", "--format=")
        git(data, "add", "memory/dream-log")
        git(data, "commit", "-q", "-m", "the dream's commit")
        journal.write_text(journal.read_text() + "a person's note\n")  # edited by hand
        committer.hand_edited()
        await committer.flush()
    assert subjects(data)[0].startswith("Hand edit: memory/dream-log/"), subjects(data)


async def test_history_behind_its_writes_is_said(tmp_path: Path) -> None:
    # A probe: with minutes of commits queued, health said history was ok.
    data = tmp_path / "data"
    async with Runtime.open(settings_of(data), clock=ManualClock(START)) as rt:
        committer = rt.history.committer
        assert committer is not None
        await committer.flush()
        assert committer.waiting_since is None and rt.history.status().last_error is None
        with acting(Actor("api", "POST /v1/memories/knowledge")):
            await rt.memories.create(Kind.KNOWLEDGE, "vpn", body="port 1194\n")
        assert committer.waiting_since is not None
        committer.waiting_since -= 3600  # as if that write had waited an hour
        said = rt.history.status().last_error
        assert said is not None and "history is behind: a write made 36" in said, said
        await committer.flush()
        assert committer.waiting_since is None and rt.history.status().last_error is None


def test_what_waits_is_timed_from_its_oldest_write() -> None:
    # A review: a failed batch without a time (a dream's) took a later write's time away.
    assert earliest(None, 5.0) == 5.0 and earliest(3.0, 5.0) == 3.0 and earliest(None) is None
