"""search_episodes as a model calls it: scoped, dated and tagged as its answer reads."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.api.problems import assert_problem


def episodes(client: TestClient, project: str | None = None, **args: Any) -> str:
    body: dict[str, Any] = {"args": args, **({"project": project} if project else {})}
    answer = client.post("/v1/tools/search_episodes", json=body)
    assert answer.status_code == 200, answer.text
    result: str = answer.json()["result"]
    return result


def episode(client: TestClient, name: str, **fields: Any) -> None:
    made = client.post(
        "/v1/memories/episode", json={"name": name, "description": name, "fields": fields}
    )
    assert made.status_code == 201, made.text


def test_the_latest_episodes_keep_to_the_project(client: TestClient) -> None:
    # Without a query every project's episodes were listed; with one, only the project's.
    episode(client, "migrated-the-webshop-db", project="webshop")
    episode(client, "deployed-the-blog", project="blog")
    episode(client, "rotated-every-key")
    listed = episodes(client, project="webshop")
    assert "migrated-the-webshop-db" in listed and "rotated-every-key" in listed
    assert "deployed-the-blog" not in listed
    assert "deployed-the-blog" in episodes(client)


def test_a_day_asked_for_is_the_day_the_answer_shows(client: TestClient) -> None:
    # 23:30 at -08:00 is 07:30 the next day in the daemon's zone (UTC here): shown as the
    # 21st, it was found only by asking for the 20th.
    episode(client, "late-call", when="2026-11-20T23:30:00-08:00")
    shown = episodes(client, since="2026-11-21", until="2026-11-21")
    assert "late-call" in shown and "when=2026-11-21 07:30" in shown
    assert episodes(client, since="2026-11-20", until="2026-11-20").startswith("No episode")
    assert "late-call" in episodes(client, since="2026-11-21T00:00:00+00:00")
    # A time's day in the daemon's zone: 01:00 at +09:00 is still the 20th in UTC.
    assert "late-call" in episodes(client, since="2026-11-21T01:00:00+09:00")
    assert episodes(client, until="2026-11-21T01:00:00+09:00").startswith("No episode")
    for bad in ("2026-11-21junk", "0001-01-01T00:00:00+14:00", "9999-12-31T23:00:00-14:00"):
        refused = client.post("/v1/tools/search_episodes", json={"args": {"since": bad}})
        assert_problem(refused, 400, "invalid_input")  # the calendar's edges were a 500


def test_a_tag_matches_whole_and_reads_as_written(client: TestClient) -> None:
    # "de" matched the list's Python text "['deploy']", and the answer showed that text.
    episode(client, "shipped", tags=["deploy", "release"])
    episode(client, "paged", tags="devops, oncall")
    assert episodes(client, tags="de").startswith("No episode")
    assert episodes(client, tags="ops").startswith("No episode")
    tagged = episodes(client, tags="Deploy")
    assert "shipped" in tagged and 'tags="deploy, release"' in tagged and "['" not in tagged
    assert "paged" in episodes(client, tags="oncall")
    assert "shipped" in episodes(client, tags="deploy, release")  # each of them
    assert episodes(client, tags="deploy, oncall").startswith("No episode")


def test_a_kind_asked_twice_lists_each_entry_once(client: TestClient) -> None:
    for name in ("caddy-proxy", "vpn"):
        assert client.post("/v1/memories/knowledge", json={"name": name}).status_code == 201
    page = client.get("/v1/memories?kind=knowledge&kind=knowledge").json()
    assert [item["name"] for item in page["items"]] == ["caddy-proxy", "vpn"]
    assert page["total"] == 2


def test_an_empty_project_is_refused_when_listing_intentions(client: TestClient) -> None:
    # `?project=` hid every intention of a project, which no other parameter gave back.
    client.post("/v1/intentions", json={"what": "ship it", "project": "webshop"})
    assert client.get("/v1/intentions?project=").status_code == 422
    assert client.get("/v1/intentions?project=a%01b").status_code == 422
    assert len(client.get("/v1/intentions").json()["items"]) == 1
