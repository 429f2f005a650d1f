"""Valid-looking values at the edges: times at the end of the calendar, names at the length
limit, keys somnid manages, a person's YAML anchors. Each is refused with a 4xx before
anything is written, or read and written without a 500; one such entry never stops a
listing, the upkeep or the index."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from somnid.memory.entry import Entry
from somnid.recall import reconcile
from somnid.recall.backend import Document
from tests.api.problems import assert_problem

EDGE_TIMES = ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00")


@pytest.mark.parametrize("when", EDGE_TIMES)
def test_a_time_at_the_end_of_the_calendar_is_refused_and_nothing_is_written(
    client: TestClient, data_dir: Path, when: str
) -> None:
    for key in ("last_used", "last_decay"):
        answer = client.post(
            "/v1/memories/knowledge",
            json={"name": f"edge-{key}", "description": "d", "fields": {key: when}},
        )
        assert_problem(answer, 400, "invalid_input")
        assert not (data_dir / f"memory/knowledge/edge-{key}").exists()
    assert_problem(
        client.post("/v1/intentions", json={"what": "renew", "due": when}), 400, "invalid_input"
    )
    answer = client.post(
        "/v1/sessions/s1/messages",
        json={"messages": [{"role": "user", "text": "hi", "timestamp": when}]},
    )
    assert_problem(answer, 422, "validation_error")
    answer = client.post("/v1/sessions/s1/tool-calls", json={"call": "x()", "timestamp": when})
    assert_problem(answer, 422, "validation_error")
    assert client.get("/v1/memories").status_code == 200


@pytest.mark.parametrize("due", ["2026-12-31T25:00", "2026-12-31xyz", "2026-12-31T10:00+25:00"])
def test_a_due_date_is_read_whole_or_refused(client: TestClient, due: str) -> None:
    assert_problem(
        client.post("/v1/intentions", json={"what": "renew", "due": due}), 400, "invalid_input"
    )


def test_a_due_date_at_the_calendar_s_end_is_a_day_like_any_other(client: TestClient) -> None:
    """``9999-12-31`` is a "never" of due dates: a day, which no zone moves."""
    made = client.post("/v1/intentions", json={"what": "someday", "due": "9999-12-31"})
    assert made.status_code == 201, made.text
    assert made.json()["due"] == "9999-12-31"
    assert client.post("/v1/maintenance/decay").status_code == 200


def test_an_episode_dated_at_the_calendar_s_edge_is_kept_and_found(client: TestClient) -> None:
    """Its ``when`` cannot be read (a relative date in its text has nothing to count from):
    it is kept as written, and everything else works around it."""
    answer = client.post(
        "/v1/memories/episode",
        json={
            "name": "edge-ep",
            "description": "met Bob",
            "body": "Yesterday we met Bob about the zanzibar plan.",
            "fields": {"when": "0001-01-01"},
        },
    )
    assert answer.status_code == 201, answer.text
    assert client.get("/v1/memories").status_code == 200
    found = client.post("/v1/recall", json={"query": "zanzibar plan"}).json()
    assert [item["name"] for item in found["items"]] == ["edge-ep"]
    assert client.post("/v1/maintenance/decay").status_code == 200


def test_a_hand_written_time_at_the_edge_reads_as_none_and_stops_nothing(
    client: TestClient, data_dir: Path
) -> None:
    folder = data_dir / "memory/knowledge/by-hand"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: by-hand\ndescription: quokka notes\n"
        "last_used: 9999-12-31 23:00:00 -05:00\nlast_decay: 0001-01-01 00:00:00 +05:00\n---\n"
        "The quokka lives on Rottnest.\n"
    )
    client.post("/v1/memories/knowledge", json={"name": "other", "description": "other"})
    assert client.post("/v1/index/sync").status_code == 200
    listed = client.get("/v1/memories", params={"kind": "knowledge"})
    assert listed.status_code == 200
    assert {item["name"] for item in listed.json()["items"]} == {"by-hand", "other"}
    read = client.get("/v1/memories/knowledge/by-hand")
    assert read.status_code == 200 and read.json()["lastUsed"] is None
    found = client.post("/v1/recall", json={"query": "quokka Rottnest"}).json()
    assert [item["name"] for item in found["items"]] == ["by-hand"]
    assert client.post("/v1/maintenance/decay").status_code == 200


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"score": -5}, "score"),
        ({"score": 1e308}, "score"),
        ({"score": True}, "score"),
        ({"score": "high"}, "score"),
        ({"stability": -99999999999999999999}, "stability"),
        ({"last_used": "yesterday"}, "last_used"),
        ({"last_used": "2026-12-31T25:00"}, "last_used"),
        ({"last_decay": "2026-10-01xyz"}, "last_decay"),
        ({"archived_from": "../../x"}, "managed by somnid"),
        ({"archive_reason": "retired"}, "managed by somnid"),
        ({"restored_at": "2026-10-03"}, "managed by somnid"),
    ],
)
def test_keys_somnid_manages_take_only_what_it_would_write(
    client: TestClient, fields: dict[str, object], says: str
) -> None:
    client.post("/v1/memories/knowledge", json={"name": "k", "description": "d"})
    answer = client.patch("/v1/memories/knowledge/k", json={"fields": fields})
    assert says in assert_problem(answer, 400, "invalid_input")["detail"]
    answer = client.post(
        "/v1/memories/knowledge", json={"name": "k2", "description": "d", "fields": fields}
    )
    assert_problem(answer, 400, "invalid_input")


def test_in_range_values_of_those_keys_are_taken(client: TestClient) -> None:
    client.post("/v1/memories/knowledge", json={"name": "k", "description": "d"})
    fields = {"score": 0.25, "stability": 3, "last_used": "2026-10-01T09:00:00+00:00"}
    answer = client.patch("/v1/memories/knowledge/k", json={"fields": fields})
    assert answer.status_code == 200, answer.text
    meta = answer.json()["meta"]
    assert (meta["score"], meta["stability"]) == (0.25, 3)


@pytest.mark.parametrize("name", ["m" * 100, "记" * 66])
def test_a_name_at_the_limit_is_archived_again_and_again(client: TestClient, name: str) -> None:
    for round_ in range(3):
        made = client.post("/v1/memories/knowledge", json={"name": name, "description": "d"})
        assert made.status_code == 201, made.text
        archived = client.post(f"/v1/memories/knowledge/{name}/archive")
        assert archived.status_code == 200, archived.text
        expected = name if round_ == 0 else f"{name}--{round_ + 1}"
        assert archived.json()["name"] == expected
    restored = client.post(f"/v1/memories/knowledge/{name}--3/restore")
    assert restored.status_code == 200, restored.text
    assert restored.json()["name"] == name


def test_upkeep_goes_on_past_an_entry_it_cannot_retire(client: TestClient) -> None:
    """Retiring needs an archive name; whatever stops one entry, the pass goes on."""
    name = "m" * 100
    client.post("/v1/memories/knowledge", json={"name": name, "description": "first"})
    client.post(f"/v1/memories/knowledge/{name}/archive")
    stale = {"score": 0.1, "last_decay": "2026-09-01T00:00:00+00:00"}
    for made in (name, "zzz-after-it"):
        answer = client.post(
            "/v1/memories/knowledge", json={"name": made, "description": "d", "fields": stale}
        )
        assert answer.status_code == 201, answer.text
    report = client.post("/v1/maintenance/decay")
    assert report.status_code == 200, report.text
    assert {change["name"] for change in report.json()["retired"]} == {name, "zzz-after-it"}


def test_a_restore_does_not_follow_a_hand_edited_name_out_of_the_archive(
    client: TestClient, data_dir: Path
) -> None:
    client.post("/v1/memories/knowledge", json={"name": "note", "description": "d"})
    client.post("/v1/memories/knowledge/note/archive")
    client.post("/v1/memories/knowledge", json={"name": "note", "description": "again"})
    archived = client.post("/v1/memories/knowledge/note/archive").json()
    assert archived["name"] == "note--2"
    path = data_dir / archived["path"]
    text = path.read_text()
    path.write_text(text.replace("archived_from: note", "archived_from: ../../../escape"))
    restored = client.post("/v1/memories/knowledge/note--2/restore")
    assert restored.status_code == 200, restored.text
    assert restored.json()["name"] == "note"
    assert not (data_dir.parent / "escape").exists()


ANCHORED = (
    "---\nname: anchored\ndescription: &d wombat burrows\nother: *d\n"
    "n: &n 5\nm: *n\nlist: &l [1, 2]\nagain: *l\n---\nWombats dig burrows.\n"
)


def test_a_person_s_yaml_anchors_survive_every_write(client: TestClient, data_dir: Path) -> None:
    folder = data_dir / "memory/knowledge/anchored"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(ANCHORED)
    answer = client.patch("/v1/memories/knowledge/anchored", json={"fields": {"x": "y"}})
    assert answer.status_code == 200, answer.text
    text = (folder / "SKILL.md").read_text()
    assert "description: &d wombat burrows\nother: *d\n" in text
    assert "n: &n 5\nm: *n\n" in text and "x: y\n" in text
    used = client.post("/v1/tools/search_knowledge", json={"args": {"query": "wombat burrows"}})
    assert used.status_code == 200, used.text
    assert "anchored" in used.json()["result"] and not used.json()["isError"]
    text = (folder / "SKILL.md").read_text()  # the use was noted, the anchors kept
    assert "other: *d\n" in text and "stability: 1\n" in text
    assert client.post("/v1/maintenance/decay").status_code == 200


@pytest.mark.parametrize("path", ["/etc/passwd", "../../etc", "memory/../../etc"])
def test_a_history_path_outside_the_data_dir_is_a_bad_request(
    client: TestClient, path: str
) -> None:
    assert_problem(client.get("/v1/history", params={"path": path}), 400, "invalid_input")


def test_an_over_long_path_is_not_echoed_whole(client: TestClient) -> None:
    answer = client.get(f"/v1/memories/knowledge/{'x' * 20_000}")
    body = assert_problem(answer, 400, "invalid_name")
    assert len(body["instance"]) < 600


def test_an_entry_that_cannot_be_written_back_is_skipped_by_upkeep_and_by_a_use(
    client: TestClient, data_dir: Path
) -> None:
    """A hand-written front-matter just under the limit: noting a use or starting its decay
    clock would push it over, so somnid leaves the file as it is and goes on."""
    folder = data_dir / "memory/knowledge/full"
    folder.mkdir(parents=True)
    notes = "n" * (64 * 1024 - 80)
    (folder / "SKILL.md").write_text(
        f"---\nname: full\ndescription: platypus facts\nnotes: {notes}\n---\nPlatypus eggs.\n"
    )
    before = (folder / "SKILL.md").read_bytes()
    stale = {"score": 0.1, "last_decay": "2026-09-01T00:00:00+00:00"}
    client.post("/v1/memories/knowledge", json={"name": "zzz", "description": "d", "fields": stale})
    assert client.post("/v1/index/sync").status_code == 200
    used = client.post("/v1/tools/search_knowledge", json={"args": {"query": "platypus eggs"}})
    assert used.status_code == 200, used.text
    assert "full" in used.json()["result"] and not used.json()["isError"]
    report = client.post("/v1/maintenance/decay")
    assert report.status_code == 200, report.text
    assert [change["name"] for change in report.json()["retired"]] == ["zzz"]
    assert "memory/knowledge/full/SKILL.md" in report.json()["skippedBroken"]
    assert (folder / "SKILL.md").read_bytes() == before


def test_one_entry_the_index_cannot_take_stops_no_sync(
    client: TestClient, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Whatever somnid fails to make of one file (a bug not yet known), the others are
    indexed and found, and the log names the file."""
    real = reconcile.document_of

    def document_of(entry: Entry, tz: dt.tzinfo) -> Document:
        if entry.name == "poison":
            raise OverflowError("date value out of range")
        return real(entry, tz)

    monkeypatch.setattr(reconcile, "document_of", document_of)
    for name in ("poison", "emu"):
        answer = client.post(
            "/v1/memories/knowledge", json={"name": name, "description": f"{name} cassowary"}
        )
        assert answer.status_code == 201, answer.text  # the file is written: the answer says so
    assert client.post("/v1/index/sync").status_code == 200
    found = client.post("/v1/recall", json={"query": "cassowary"}).json()
    assert [item["name"] for item in found["items"]] == ["emu"]
    assert "could not index memory/knowledge/poison/SKILL.md" in caplog.text


def test_a_write_is_answered_as_done_whatever_the_index_makes_of_it(
    client: TestClient, data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is the truth: once it is on disk the client is told so, even when the index
    then fails on it (the next sync tries again)."""

    def path(self: reconcile.Reconciler, path: Path) -> bool:
        raise RuntimeError("an index bug")

    monkeypatch.setattr(reconcile.Reconciler, "path", path)
    answer = client.post("/v1/memories/knowledge", json={"name": "kept", "description": "emu"})
    assert answer.status_code == 201, answer.text
    assert (data_dir / answer.json()["path"]).is_file()
    # The listeners after the index heard of it: history commits it as the write it is.
    listed = client.get("/v1/history").json()["items"]
    assert [c["source"] for c in listed if c["changes"][0]["name"] == "kept"] == ["api"]
    # And a full sync catches the index up by itself.
    deadline = time.monotonic() + 60
    while "kept" not in [
        i["name"] for i in client.post("/v1/recall", json={"query": "emu"}).json()["items"]
    ]:
        assert time.monotonic() < deadline, "the index never caught up"
        time.sleep(0.05)


def test_a_priority_no_one_can_read_is_refused_not_made_mid(client: TestClient) -> None:
    """ "urgent" was stored as ``mid``: the agent believed it had asked for urgency."""
    answer = client.post(
        "/v1/tools/add_intention", json={"args": {"what": "x", "priority": "urgent"}}
    )
    assert_problem(answer, 400, "invalid_input")
    answer = client.post(
        "/v1/memories/intention", json={"description": "x", "fields": {"priority": "urgent"}}
    )
    assert_problem(answer, 400, "invalid_input")
    blank = client.post("/v1/tools/add_intention", json={"args": {"what": "z", "priority": ""}})
    assert blank.status_code == 200 and "mid)" in blank.json()["result"], blank.text
    made = client.post("/v1/tools/add_intention", json={"args": {"what": "y", "priority": "High"}})
    assert made.status_code == 200 and "high)" in made.json()["result"], made.text
    name = made.json()["result"].split()[2].rstrip(":")
    answer = client.patch(f"/v1/memories/intention/{name}", json={"fields": {"priority": 3}})
    assert_problem(answer, 400, "invalid_input")
    assert client.get(f"/v1/memories/intention/{name}").json()["meta"]["priority"] == "high"


def test_a_knowledge_type_is_found_below_three_times_the_limit(client: TestClient) -> None:
    """Twelve facts about lynxes rank above four decisions: the type was filtered out of the
    first 3 × limit hits only, and "No matching knowledge" came back."""
    made = [(f"lynx-fact-{i}", f"lynx fact {i}: lynx lynx lynx", "fact") for i in range(12)]
    made += [
        (f"lynx-decision-{i}", f"we decided on the lynx route {i}", "decision") for i in range(4)
    ]
    for name, description, kind in made:
        body = {"name": name, "description": description, "fields": {"type": kind}}
        assert client.post("/v1/memories/knowledge", json=body).status_code == 201
    for limit in (1, 2, 4):
        args = {"query": "lynx", "entry_type": "decision", "limit": limit}
        found = client.post("/v1/tools/search_knowledge", json={"args": args}).json()["result"]
        assert found.count("type=decision") == limit, found
    # In one session: what a typed search read but did not show is not "seen" after it.
    typed = {"query": "lynx", "entry_type": "decision", "limit": 2}
    call = {"args": typed, "sessionId": "lynx-session"}
    assert (
        client.post("/v1/tools/search_knowledge", json=call).json()["result"].count("decision") >= 2
    )
    facts = {"args": {"query": "lynx", "limit": 10}, "sessionId": "lynx-session"}
    found = client.post("/v1/tools/search_knowledge", json=facts).json()["result"]
    assert found.count("type=fact") == 10, found


def test_an_undated_episode_is_in_no_date_range(client: TestClient, data_dir: Path) -> None:
    """Without when or created it read as year 1: every ``until`` kept it."""
    folder = data_dir / "memory/episodes/undated-heron"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: heron nest found\n---\n\nAnn: a nest.\n")
    for args in ({"until": "1990-01-01"}, {"since": "1990-01-01"}):
        found = client.post("/v1/tools/search_episodes", json={"args": args}).json()["result"]
        assert "heron" not in found, (args, found)
    found = client.post("/v1/tools/search_episodes", json={"args": {}}).json()["result"]
    assert "heron" in found


def test_a_day_the_calendar_has_not_reads_as_text_not_a_broken_file(
    client: TestClient, data_dir: Path
) -> None:
    """``when: 2023-02-30`` by hand made the whole entry broken ("ValueError"), out of
    recall; a value somnid cannot use is read as missing, and kept."""
    folder = data_dir / "memory/episodes/puffins"
    folder.mkdir(parents=True)
    text = "---\ndescription: puffin colony count\nwhen: 2023-02-30\n---\n\nAnn: we counted.\n"
    (folder / "SKILL.md").write_text(text)
    got = client.get("/v1/memories/episode/puffins")
    assert got.status_code == 200, got.text
    assert client.get("/v1/health").json()["brokenFiles"] == []
    changed = client.patch("/v1/memories/episode/puffins", json={"body": "Ann: 412 pairs.\n"})
    assert changed.status_code == 200, changed.text
    assert "2023-02-30" in (folder / "SKILL.md").read_text()


def test_a_next_line_character_comes_back_as_sent_and_upkeep_leaves_it(
    client: TestClient, data_dir: Path
) -> None:
    # A probe: U+0085 was written raw in a quoted scalar, which YAML reads as a line break:
    # "a\x85b" came back "a b", and the next decay rewrote the file so.
    made = client.post(
        "/v1/memories/knowledge",
        json={"name": "nel", "description": "a\u0085b", "fields": {"note": "c\u0085d"}},
    )
    assert made.status_code == 201, made.text
    read = client.get("/v1/memories/knowledge/nel").json()
    assert read["description"] == "a\u0085b" and read["meta"]["note"] == "c\u0085d"
    path = data_dir / "memory/knowledge/nel/SKILL.md"
    before = path.read_bytes()
    assert b"\xc2\x85" not in before  # escaped, \N: readable by every YAML reader
    assert client.post("/v1/maintenance/decay").status_code == 200
    assert path.read_bytes() == before
    keyed = client.post("/v1/memories/knowledge", json={"name": "k", "fields": {"a\u0085b": 1}})
    assert "holds a control character" in assert_problem(keyed, 400, "invalid_input")["detail"]


@pytest.mark.parametrize(
    ("kind", "fields", "says"),
    [
        ("knowledge", {"verified": "false"}, "verified must be true or false"),
        ("knowledge", {"verified": "no"}, "verified must be true or false"),
        ("knowledge", {"type": ["a"]}, "type must be one word"),
        ("knowledge", {"description": "X"}, "description is given twice, differently"),
        ("knowledge", {"description": 5}, "description is text"),
        ("knowledge", {"description": None}, "description is text"),
        ("knowledge", {"description": ["a"]}, "description is text"),
        ("episode", {"salience": "weird"}, "salience must be low, mid or high"),
        ("episode", {"when": "garbage"}, "when must be an ISO 8601 time"),
        ("episode", {"when": "2026-02-30"}, "when must be an ISO 8601 time"),
        ("episode", {"when": True}, "when must be an ISO 8601 time"),
        ("episode", {"when": 5}, "when must be an ISO 8601 time"),
        ("episode", {"when": ["x"]}, "when must be an ISO 8601 time"),
    ],
)
def test_a_field_somnid_would_misread_is_refused_not_changed(
    client: TestClient, data_dir: Path, kind: str, fields: dict[str, object], says: str
) -> None:
    # A probe: "verified": "false" was read as true, a list type stored as "['a']", a
    # description among the fields replaced the one given, a weird salience became low,
    # and an episode took any when, losing its date: each with a 201.
    answer = client.post(
        f"/v1/memories/{kind}", json={"name": "odd", "description": "d", "fields": fields}
    )
    assert says in assert_problem(answer, 400, "invalid_input")["detail"]
    assert not (data_dir / f"memory/{kind}s/odd").exists()
    patched = client.post(f"/v1/memories/{kind}", json={"name": "fine", "description": "d"})
    assert patched.status_code == 201, patched.text
    change = client.patch(f"/v1/memories/{kind}/fine", json={"description": "d", "fields": fields})
    assert says in assert_problem(change, 400, "invalid_input")["detail"]


def test_what_a_field_may_be(client: TestClient) -> None:
    made = client.post(
        "/v1/memories/episode",
        json={
            "name": "ep",
            "fields": {"salience": "Medium", "when": "2023-05-08T13:56:00+02:00"},
        },
    )
    assert made.status_code == 201, made.text
    assert made.json()["meta"]["salience"] == "mid"
    known = client.post(
        "/v1/memories/knowledge",
        json={"name": "k", "fields": {"verified": False, "type": "procedure"}},
    )
    assert known.status_code == 201, known.text
    assert known.json()["meta"]["verified"] is False and known.json()["meta"]["type"] == "procedure"
    among = client.post(
        "/v1/memories/knowledge", json={"name": "f", "fields": {"description": "D"}}
    )
    assert among.status_code == 201, among.text
    assert among.json()["description"] == "D" and "description" in among.json()["meta"]


def test_a_broken_file_removed_by_hand_is_no_longer_skipped(
    client: TestClient, data_dir: Path
) -> None:
    # Decay listed a broken file a person had since deleted, until a health probe rechecked.
    folder = data_dir / "memory/knowledge/tmpbroken"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: x\ndescription: [b\n---\n")
    first = client.post("/v1/maintenance/decay").json()
    assert "memory/knowledge/tmpbroken/SKILL.md" in first["skippedBroken"]
    (folder / "SKILL.md").unlink()
    folder.rmdir()
    assert client.post("/v1/maintenance/decay").json()["skippedBroken"] == []


@pytest.mark.parametrize("folder", ["my notes", "CON", "semi;colon", "n" * 130])
def test_a_folder_made_by_hand_with_a_name_no_request_can_give_is_reported_and_left_out(
    client: TestClient, data_dir: Path, folder: str
) -> None:
    # Recall, hints and the search tools answered 400 invalid_name for every query once the
    # index held it ("name 'my notes' contains characters a name may not have").
    made = client.post(
        "/v1/memories/knowledge", json={"name": "deploy-window", "body": "Deploys go out Tuesdays."}
    )
    assert made.status_code == 201, made.text
    (data_dir / "memory/knowledge" / folder).mkdir()
    (data_dir / "memory/knowledge" / folder / "SKILL.md").write_text(
        "---\ndescription: notes on the deploy window\n---\n\nDeploys go out Tuesdays, notes.\n"
    )
    assert client.post("/v1/index/sync").status_code == 200
    found = client.post("/v1/recall", json={"query": "when do deploys go out"})
    assert found.status_code == 200, found.text
    assert [item["name"] for item in found.json()["items"]] == ["deploy-window"]
    tool = client.post("/v1/tools/search_knowledge", json={"args": {"query": "deploy window"}})
    assert tool.status_code == 200, tool.text
    listed = client.get("/v1/memories?kind=knowledge").json()["items"]
    assert [item["name"] for item in listed] == ["deploy-window"]
    broken = client.get("/v1/health").json()["brokenFiles"]
    assert [item["path"] for item in broken] == [f"memory/knowledge/{folder}/SKILL.md"]
    assert "rename the folder" in broken[0]["reason"]
    assert (data_dir / "memory/knowledge" / folder / "SKILL.md").exists()  # left alone
