"""The memory resources over HTTP, with the real app, its lifespan and a temp data dir."""

from __future__ import annotations

import unicodedata
from pathlib import Path

from fastapi.testclient import TestClient

from tests.api.problems import assert_problem


def create(client: TestClient, kind: str = "knowledge", **body: object) -> dict[str, object]:
    response = client.post(f"/v1/memories/{kind}", json=body)
    assert response.status_code == 201, response.text
    data: dict[str, object] = response.json()
    return data


def test_create_read_edit_by_hand_read_again(client: TestClient, data_dir: Path) -> None:
    made = create(
        client,
        name="Deploy window",
        description="when we deploy",
        body="Tue-Thu\n",
        fields={"tags": ["ops"], "ticket": "12-34"},
    )
    assert made["name"] == "Deploy-window"
    assert made["path"] == "memory/knowledge/Deploy-window/SKILL.md"
    path = data_dir / str(made["path"])
    text = path.read_text()
    assert "description: when we deploy\n" in text and "ticket: 12-34\n" in text
    path.write_text(text.replace("Tue-Thu", "Tue-Wed, changed by hand"))
    response = client.get("/v1/memories/knowledge/Deploy-window")
    assert response.status_code == 200
    assert response.json()["body"] == "Tue-Wed, changed by hand\n"
    assert response.headers["etag"] == f'"{response.json()["etag"]}"'
    assert response.headers["etag"] != f'"{made["etag"]}"'


def test_created_entries_carry_lifecycle_fields(client: TestClient) -> None:
    made = create(client, "episode", description="fixed CI", fields={"salience": "high"})
    assert str(made["name"]).startswith("ep-20261003-120000")
    meta = made["meta"]
    assert isinstance(meta, dict)
    assert meta["score"] == 0.8 and meta["stability"] == 0 and meta["salience"] == "high"
    assert meta["created"] == "2026-10-03T12:00:00+00:00"
    intention = create(
        client,
        "intention",
        description="renew the domain",
        fields={"due": "2026-12-15", "cue": "domain", "priority": "HIGH"},
    )
    assert intention["name"] == "pi-20261003-001"
    imeta = intention["meta"]
    assert isinstance(imeta, dict)
    assert (imeta["status"], imeta["due"], imeta["priority"]) == ("open", "2026-12-15", "high")


def test_put_patch_and_if_match(client: TestClient) -> None:
    made = create(client, name="k", description="d", body="one")
    etag = f'"{made["etag"]}"'
    response = client.patch(
        "/v1/memories/knowledge/k", json={"fields": {"owner": "me"}}, headers={"If-Match": etag}
    )
    assert response.status_code == 200
    assert response.json()["meta"]["owner"] == "me"
    assert response.json()["body"] == "one\n"
    stale = client.put(
        "/v1/memories/knowledge/k",
        json={"description": "x", "body": "two"},
        headers={"If-Match": etag},
    )
    assert_problem(stale, 412, "precondition_failed")
    assert stale.headers["etag"] == response.headers["etag"]
    fresh = client.put(
        "/v1/memories/knowledge/k",
        json={"description": "x", "body": "two"},
        headers={"If-Match": response.headers["etag"]},
    )
    assert fresh.status_code == 200
    assert fresh.json()["meta"]["owner"] == "me"  # PUT keeps keys it was not given
    assert fresh.json()["body"] == "two\n"


def test_archive_restore_and_list(client: TestClient) -> None:
    create(client, name="a", description="alpha")
    create(client, name="b", description="beta")
    create(client, "skill", name="s", description="a skill")
    archived = client.post("/v1/memories/knowledge/a/archive", json={"reason": "outdated"})
    assert archived.status_code == 200
    assert archived.json()["archived"] is True
    assert archived.json()["path"] == "memory/archived/a/SKILL.md"
    assert_problem(client.get("/v1/memories/knowledge/a"), 404, "not_found")
    listing = client.get("/v1/memories", params={"kind": "knowledge"}).json()
    assert [item["name"] for item in listing["items"]] == ["b"]
    everything = client.get("/v1/memories", params={"archived": "true"}).json()
    assert everything["total"] == 3
    found = client.get("/v1/memories", params={"text": "ALPHA", "archived": "true"}).json()
    assert [item["name"] for item in found["items"]] == ["a"]
    paged = client.get("/v1/memories", params={"limit": 1, "offset": 1}).json()
    assert paged["total"] == 2 and len(paged["items"]) == 1
    restored = client.post("/v1/memories/knowledge/a/restore")
    assert restored.status_code == 200 and restored.json()["archived"] is False
    assert client.get("/v1/memories/knowledge/a").status_code == 200


def test_conflicts_and_missing(client: TestClient) -> None:
    create(client, name="k")
    assert_problem(client.post("/v1/memories/knowledge", json={"name": "k"}), 409, "conflict")
    assert_problem(
        client.post("/v1/memories/knowledge", json={"description": "no name"}), 400, "invalid_input"
    )
    assert_problem(client.patch("/v1/memories/knowledge/zz", json={}), 404, "not_found")
    assert_problem(client.post("/v1/memories/knowledge/zz/restore"), 404, "not_found")
    assert_problem(client.post("/v1/memories/profile/about_me/archive"), 400, "invalid_input")


def test_profiles(client: TestClient, data_dir: Path) -> None:
    create(client, "profile", name="about_me", description="who I am", body="A careful helper.")
    create(client, "profile", name="ou_1", description="Alice", body="Runs releases.")
    assert (data_dir / "memory/about_me.md").is_file()
    assert (data_dir / "memory/users/ou_1/about_user.md").is_file()
    names = [
        i["name"] for i in client.get("/v1/memories", params={"kind": "profile"}).json()["items"]
    ]
    assert names == ["about_me", "ou_1"]


def test_decay_over_http_with_a_moving_clock(client: TestClient, clock: object) -> None:
    from datetime import timedelta

    from somnid.memory.clock import ManualClock

    assert isinstance(clock, ManualClock)
    create(client, name="fades", description="never used again")
    create(client, "episode", name="big-day", fields={"salience": "high"})
    create(client, "intention", description="stays", fields={"due": "2026-10-04"})
    clock.advance(timedelta(days=1))
    report = client.post("/v1/maintenance/decay").json()
    assert {(c["name"], round(c["scoreAfter"], 4)) for c in report["decayed"]} == {
        ("fades", 0.45),
        ("big-day", 0.72),
    }
    again = client.post("/v1/maintenance/decay").json()
    assert again["decayed"] == []  # idempotent within a day
    clock.advance(timedelta(days=8))  # 0.5 * 0.9**9 = 0.1937 < 0.2
    report = client.post("/v1/maintenance/decay").json()
    assert [c["name"] for c in report["retired"]] == ["fades"]
    archived = client.get("/v1/memories/knowledge/fades", params={"archived": "true"}).json()
    assert archived["meta"]["archive_reason"] == "retired"
    assert archived["score"] == 0.1937
    episode = client.get("/v1/memories/episode/big-day").json()
    assert episode["score"] == round(0.8 * 0.9**9, 4)
    intentions = client.get("/v1/memories", params={"kind": "intention"}).json()
    assert intentions["total"] == 1 and intentions["items"][0]["score"] == 1.0


def test_chinese_names_round_trip_through_urls(client: TestClient) -> None:
    made = client.post("/v1/memories/knowledge", json={"name": "部署 窗口", "body": "周二到周四"})
    assert made.status_code == 201
    assert made.json()["name"] == "部署-窗口"
    location = made.headers["location"]
    assert location == "/v1/memories/knowledge/%E9%83%A8%E7%BD%B2-%E7%AA%97%E5%8F%A3"
    assert client.get(location).json()["body"] == "周二到周四\n"


# ----------------------------------------------------------------- names (issue 14)


def test_one_name_limit_in_the_schema_and_the_code(client: TestClient) -> None:
    from somnid.memory.names import MAX_NAME_CHARS

    schema = client.get("/openapi.json").json()["components"]["schemas"]["MemoryCreate"]
    assert schema["properties"]["name"]["maxLength"] == MAX_NAME_CHARS
    create(client, name="x" * MAX_NAME_CHARS)
    answer = client.post("/v1/memories/knowledge", json={"name": "y" * 150})
    assert_problem(answer, 400, "invalid_name")
    assert f"150 characters long; at most {MAX_NAME_CHARS}" in answer.json()["detail"]
    answer = client.post("/v1/memories/knowledge", json={"name": "名" * 70})  # 210 bytes
    assert_problem(answer, 400, "invalid_name")
    assert "210 bytes of UTF-8; at most 200" in answer.json()["detail"]


def test_names_differing_only_in_case_do_not_coexist(client: TestClient) -> None:
    create(client, name="deploy-window", body="Tue-Thu")
    answer = client.post("/v1/memories/knowledge", json={"name": "Deploy-Window"})
    assert_problem(answer, 409, "conflict")
    assert answer.json()["name"] == "deploy-window"
    assert "'deploy-window'" in answer.json()["detail"]
    # Restore: an archived Deploy-Window cannot come back next to a live deploy-window.
    client.post("/v1/memories/knowledge/deploy-window/archive")
    create(client, name="Deploy-Window", body="other")
    assert client.post("/v1/memories/knowledge/Deploy-Window/archive").status_code == 200
    create(client, name="deploy-window", body="again")
    answer = client.post("/v1/memories/knowledge/Deploy-Window/restore")
    assert_problem(answer, 409, "conflict")
    assert answer.json()["name"] == "deploy-window"
    names = {item["name"] for item in client.get("/v1/memories").json()["items"]}
    assert names == {"deploy-window"}
    # Generated names step around a twin in another case.
    made = create(client, kind="intention", description="tea", name=None)
    assert made["name"] != ""


def test_names_differing_only_in_unicode_form_do_not_coexist(
    client: TestClient, data_dir: Path
) -> None:
    # A probe: a folder made by hand in decomposed form (as macOS writes names) and a
    # create of the same name composed made two folders of one visible name.
    decomposed = "Re\u0301sume\u0301"
    folder = data_dir / "memory/knowledge" / decomposed
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: by hand\n---\n\nmine\n")
    answer = client.post("/v1/memories/knowledge", json={"name": "R\u00e9sum\u00e9"})
    assert_problem(answer, 409, "conflict")
    assert answer.json()["name"] == decomposed
    assert sorted(p.name for p in (data_dir / "memory/knowledge").iterdir()) == [decomposed]


def test_an_emoji_in_a_name_is_refused_not_dropped(client: TestClient) -> None:
    for raw in ("🚀 launch", "launch 🚀", "notes ©"):
        answer = client.post("/v1/memories/knowledge", json={"name": raw})
        assert_problem(answer, 400, "invalid_name")
        assert "emoji" in answer.json()["detail"], raw
    assert client.get("/v1/memories/knowledge/launch").status_code == 404
    assert create(client, name="हिन्दी नोट")["name"] == "हिन्दी-नोट"  # marks are kept


def test_a_name_in_another_unicode_form_is_the_same_entry(
    client: TestClient, data_dir: Path
) -> None:
    """A Mac, and some keyboards, send "é" as "e" and a combining accent (NFD). An entry made
    as "café" that way was stored composed and then 404 on read, while a create of the
    composed name said 409: it exists."""
    nfd, nfc = unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")
    assert nfd != nfc
    assert create(client, name=nfd, body="espresso\n")["name"] == nfc
    url = f"/v1/memories/knowledge/{nfd}"
    assert client.get(url).json()["name"] == nfc
    changed = client.patch(url, json={"body": "flat white\n"})
    assert (changed.status_code, changed.json()["name"]) == (200, nfc), changed.text
    assert client.post(f"{url}/archive").json()["name"] == nfc
    assert client.get(f"{url}?archived=true").json()["body"] == "flat white\n"
    assert client.post(f"{url}/restore").json()["name"] == nfc
    assert [p.name for p in (data_dir / "memory/knowledge").iterdir() if p.name != "archived"] == [
        nfc
    ]
    # Its history, and a purge, by the decomposed name (the purge answered 404 while the
    # read said 200: the person took their data for purged).
    assert client.get(f"/v1/history/entries/knowledge/{nfd}").status_code == 200
    purged = client.post(f"{url}/purge", params={"confirm": nfd}, json={})
    assert purged.status_code == 200, purged.text
    assert client.get(f"/v1/memories/knowledge/{nfc}").status_code == 404
    # A name decomposed past the length limit (60 "é" are 120 code points) is found too.
    long_nfc = "é" * 60
    assert create(client, name=long_nfc, body="x\n")["name"] == long_nfc
    decomposed = client.get(f"/v1/memories/knowledge/{unicodedata.normalize('NFD', long_nfc)}")
    assert decomposed.status_code == 200, decomposed.text
    # A folder made by hand in the other form is found by the composed name too.
    naive = unicodedata.normalize("NFD", "naïve")
    folder = data_dir / "memory/knowledge" / naive
    folder.mkdir()
    (folder / "SKILL.md").write_text(f"---\nname: {naive}\n---\nkept as typed\n")
    found = client.get(f"/v1/memories/knowledge/{unicodedata.normalize('NFC', naive)}")
    assert (found.status_code, found.json()["name"]) == (200, naive), found.text


def test_a_write_keeps_how_a_person_laid_out_the_front_matter(
    client: TestClient, data_dir: Path
) -> None:
    """A PATCH of the description re-indented every nested key of the file and added a
    blank line under the fence: the person's `git diff` showed the whole block."""
    create(client, name="tea", body="x\n")
    path = data_dir / "memory/knowledge/tea/SKILL.md"
    laid_out = (
        path.read_text()
        .replace("description: ''\n", "description: old\nlinks:\n    home: x\ntags:\n    - green\n")
        .replace("---\n\nx\n", "---\nx\n")
    )
    path.write_text(laid_out)
    assert client.patch("/v1/memories/knowledge/tea", json={"description": "new"}).is_success
    assert path.read_text() == laid_out.replace("description: old", "description: new")
