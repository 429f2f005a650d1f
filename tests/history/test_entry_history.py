"""One entry's history over HTTP with the real app: every commit that touched it (API write,
hand edit, dream, revert) with that entry's diff, and the revert of any one of them limited to
the entry, refused like every revert when a later change touched it. Purge's confirmation
takes the name as it was typed at creation."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.dream.pipeline.fakes import ScriptedJSON, by_stage, extraction
from tests.dream.pipeline.test_pipeline import BOSTON
from tests.history.helpers import git, history_client, wait_for

SAID = dt.datetime(2026, 10, 3, 11, 0, tzinfo=dt.UTC)


@pytest.fixture
def window_s() -> float:
    return 0.1


@pytest.fixture
def client(data_dir: Path, clock: ManualClock, window_s: float) -> Iterator[TestClient]:
    with history_client(data_dir, clock, window_s, dream={"by_speaker": False}) as test_client:
        yield test_client


def entry_history(client: TestClient, kind: str, name: str) -> list[dict[str, Any]]:
    response = client.get(f"/v1/history/entries/{kind}/{name}")
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["kind"], body["name"], body["total"]) == (kind, name, len(body["items"]))
    items: list[dict[str, Any]] = body["items"]
    return items


def hand_edit(client: TestClient, path: Path, old: str, new: str) -> None:
    """Edit the file as a person would, and wait until the watcher's commit is in history."""
    path.write_text(path.read_text().replace(old, new))
    wait_for(
        lambda: (
            client.get("/v1/history", params={"limit": 1}).json()["items"][0]["source"] == "hand"
        ),
        timeout=120,
    )


def test_an_entry_lists_its_api_and_hand_edits_and_reverts_the_hand_edit(
    client: TestClient, data_dir: Path
) -> None:
    client.post("/v1/memories/knowledge", json={"name": "vpn", "body": "port 1194\n"})
    client.post("/v1/memories/knowledge", json={"name": "other", "body": "unrelated\n"})
    client.get("/v1/history")  # committed: the edit below is a commit of its own
    assert client.patch("/v1/memories/knowledge/vpn", json={"body": "port 443\n"}).is_success
    client.get("/v1/history")
    path = data_dir / "memory/knowledge/vpn/SKILL.md"
    as_api_wrote = path.read_bytes()
    hand_edit(client, path, "port 443", "port 8443, by hand")

    hand, api_edit, created = entry_history(client, "knowledge", "vpn")
    assert [c["commit"]["source"] for c in (hand, api_edit, created)] == ["hand", "api", "api"]
    [diff] = hand["entries"]
    assert diff["change"] == {
        "path": "memory/knowledge/vpn/SKILL.md",
        "status": "modified",
        "kind": "knowledge",
        "name": "vpn",
        "archived": False,
    }
    assert "-port 443" in diff["diff"] and "+port 8443, by hand" in diff["diff"]
    assert "+port 443" in api_edit["entries"][0]["diff"]
    # The create's commit also added "other"; this entry's history shows only its own diff.
    assert [e["change"]["name"] for e in created["entries"]] == ["vpn"]

    # The API edit is followed by the hand edit: reverting it would lose the hand edit.
    refused = client.post(f"/v1/history/entries/knowledge/vpn/{api_edit['commit']['id']}/revert")
    assert_problem(refused, 409, "revert_conflict")
    assert refused.json()["entries"][0]["label"] == "knowledge/vpn"

    done = client.post(f"/v1/history/entries/knowledge/vpn/{hand['commit']['id']}/revert")
    assert done.status_code == 200, done.text
    assert done.json()["paths"] == ["memory/knowledge/vpn/SKILL.md"]
    assert path.read_bytes() == as_api_wrote
    assert client.get("/v1/memories/knowledge/vpn").json()["body"] == "port 443\n"
    [revert, *_] = entry_history(client, "knowledge", "vpn")
    assert revert["commit"]["reverts"] == hand["commit"]["id"]
    assert revert["commit"]["subject"].startswith(
        f"Revert {hand['commit']['id'][:12]} for knowledge/vpn"
    )


@pytest.mark.parametrize("window_s", [60.0])  # both writes in one commit (the longest window)
def test_reverting_a_commit_for_one_entry_leaves_the_rest_of_it(
    client: TestClient, data_dir: Path
) -> None:
    client.post("/v1/memories/knowledge", json={"name": "a1", "body": "one\n"})
    client.post("/v1/memories/knowledge", json={"name": "a2", "body": "two\n"})
    [both] = entry_history(client, "knowledge", "a1")
    sha = both["commit"]["id"]
    assert {c["name"] for c in both["commit"]["changes"]} == {"a1", "a2"}

    assert_problem(
        client.post(f"/v1/history/entries/knowledge/zz/{sha}/revert"), 400, "invalid_input"
    )
    done = client.post(f"/v1/history/entries/knowledge/a1/{sha}/revert")
    assert done.status_code == 200, done.text
    assert client.get("/v1/memories/knowledge/a1").status_code == 404
    assert client.get("/v1/memories/knowledge/a2").json()["body"] == "two\n"
    assert not (data_dir / "memory/knowledge/a1").exists()
    assert "Reverts-Dream" not in git(data_dir, "log", "-1", "--format=%B")


def test_a_dreams_change_to_one_entry_is_reverted_alone(client: TestClient) -> None:
    messages = [
        {
            "role": "user",
            "text": text,
            "speaker": who,
            "timestamp": (SAID + dt.timedelta(minutes=i)).isoformat(),
        }
        for i, (who, text) in enumerate(BOSTON)
    ]
    assert client.post("/v1/sessions/chat-1/messages", json={"messages": messages}).is_success
    client.post("/v1/sessions/chat-1/close")
    runtime: Any = client.app.state.runtime  # type: ignore[attr-defined]
    runtime.dreamer.backend = ScriptedJSON(
        by_stage(lambda r: extraction(("preference", ["L4"], "Dana prefers green kites.")))
    )
    dream = client.post("/v1/sleep/run", json={"trigger": "test", "wait": True}).json()
    assert dream["result"]["status"] == "deep_sleep", dream
    [whole] = client.get("/v1/history", params={"dreams": "true"}).json()["items"]
    names = [c["name"] for c in whole["changes"] if c["kind"] == "knowledge"]
    [entry] = [
        got
        for got in (client.get(f"/v1/memories/knowledge/{name}").json() for name in names)
        if "green kites" in got["body"]
    ]
    [commit] = entry_history(client, "knowledge", entry["name"])
    assert commit["commit"]["source"] == "dream" and commit["commit"]["dreamId"]
    assert "green kites" in commit["entries"][0]["diff"]

    sha = commit["commit"]["id"]
    done = client.post(f"/v1/history/entries/knowledge/{entry['name']}/{sha}/revert")
    assert done.status_code == 200, done.text
    assert client.get(f"/v1/memories/knowledge/{entry['name']}").status_code == 404
    # The dream's other changes stay (its person entry, its journal).
    assert client.get("/v1/history/" + sha).json()["commit"]["dreamId"]
    assert len(done.json()["paths"]) == 1


def test_entry_history_bad_requests_are_problems(client: TestClient) -> None:
    assert entry_history(client, "knowledge", "never") == []
    assert_problem(client.get("/v1/history/entries/nokind/x"), 422, "validation_error")
    assert_problem(client.get("/v1/history/entries/knowledge/.hidden"), 400, "invalid_name")
    assert_problem(
        client.post("/v1/history/entries/knowledge/x/zzzz/revert"), 422, "validation_error"
    )
    client.post("/v1/memories/knowledge", json={"name": "x"})
    assert_problem(client.post("/v1/history/entries/knowledge/x/abcdef12/revert"), 404, "not_found")


def test_purge_takes_the_name_as_it_was_typed_at_creation(client: TestClient) -> None:
    made = client.post("/v1/memories/knowledge", json={"name": "old vpn", "body": "x\n"})
    assert made.json()["name"] == "old-vpn"
    wrong = client.post("/v1/memories/knowledge/old-vpn/purge", params={"confirm": "old"})
    assert_problem(wrong, 400, "confirmation_required")
    done = client.post("/v1/memories/knowledge/old-vpn/purge", params={"confirm": "old vpn"})
    assert done.status_code == 200, done.text
    assert client.get("/v1/memories/knowledge/old-vpn").status_code == 404
