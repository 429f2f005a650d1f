"""GET /v1/history/identity: every change to a profile for review (issue 26, 27), with who
made it, its diff per profile and the commit that reverted it; other entries left out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem
from tests.history.helpers import history_client


@pytest.fixture
def client(data_dir: Path, clock: ManualClock) -> Iterator[TestClient]:
    with history_client(data_dir, clock, 0.1) as test_client:
        yield test_client


def test_profile_changes_are_listed_with_their_diffs_and_reverts(client: TestClient) -> None:
    def write(method: str, url: str, **body: str) -> None:
        answer = client.request(method, url, json=body)
        assert answer.is_success, answer.text
        assert client.get("/v1/history").status_code == 200  # committed: one commit each

    write("POST", "/v1/memories/profile", name="ann", body="- likes green tea\n")
    write("POST", "/v1/memories/knowledge", name="kites", body="fly in autumn\n")
    write("PATCH", "/v1/memories/profile/ann", body="- likes green tea\n- lives in Porto\n")
    write("POST", "/v1/memories/profile", name="about_me", body="- I help the household\n")

    page = client.get("/v1/history/identity").json()
    assert page["total"] == 3 and (page["offset"], page["limit"]) == (0, 20)
    about_me, moved, created = page["items"]
    assert [e["change"]["path"] for e in about_me["entries"]] == ["memory/about_me.md"]
    [entry] = moved["entries"]
    assert entry["change"] == {
        "path": "memory/users/ann/about_user.md", "status": "modified", "kind": "profile",
        "name": "ann", "archived": False,
    }  # fmt: skip
    assert "+- lives in Porto" in entry["diff"] and entry["revertedBy"] is None
    assert moved["commit"]["source"] == "api" and moved["commit"]["dreamId"] is None
    assert created["entries"][0]["change"]["status"] == "added"

    sha = moved["commit"]["id"]
    undone = client.post(f"/v1/history/entries/profile/ann/{sha}/revert")
    assert undone.status_code == 200, undone.text
    page = client.get("/v1/history/identity", params={"limit": 2}).json()
    assert page["total"] == 4 and len(page["items"]) == 2
    revert, about_me = page["items"]
    assert revert["commit"]["reverts"] == sha
    later = client.get("/v1/history/identity", params={"offset": 2, "limit": 1}).json()
    assert later["items"][0]["commit"]["id"] == sha
    assert later["items"][0]["entries"][0]["revertedBy"] == undone.json()["commit"]
    assert client.get("/v1/history/identity", params={"dreams": "true"}).json() == {
        "items": [], "total": 0, "offset": 0, "limit": 20,
    }  # fmt: skip

    for bad in ({"limit": 0}, {"limit": 201}, {"offset": -1}, {"dreams": "maybe"}):
        assert_problem(client.get("/v1/history/identity", params=bad), 422, "validation_error")
