"""The awake half over HTTP: a scripted conversation, prompt sections, intentions, tools."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from tests.api.problems import assert_problem


def call(client: TestClient, name: str, **body: Any) -> str:
    response = client.post(f"/v1/tools/{name}", json=body)
    assert response.status_code == 200, response.text
    result: str = response.json()["result"]
    return result


def prompt(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/prompt", json=body)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def memory(client: TestClient, kind: str, **body: Any) -> None:
    assert client.post(f"/v1/memories/{kind}", json=body).status_code == 201


def test_scripted_conversation_lands_in_a_readable_log(client: TestClient, data_dir: Path) -> None:
    turns = [
        {
            "role": "user",
            "text": "Remind me to renew the domain before 15 December.",
            "userId": "ou_1",
        },
        {"role": "agent", "text": "I'll remind you about the domain renewal."},
    ]
    assert client.post("/v1/sessions/chat-1/messages", json={"messages": turns}).status_code == 200
    tool = {"call": "add_intention(what='renew domain')", "result": "Added intention pi-1"}
    assert client.post("/v1/sessions/chat-1/tool-calls", json=tool).status_code == 200
    closed = client.post("/v1/sessions/chat-1/close").json()
    text = (data_dir / closed["path"]).read_text()
    assert "chat_id: chat-1" in text and "status: pending" in text and "message_count: 3" in text
    assert "[user] 2026-10-03" in text and "Remind me to renew the domain" in text
    assert "[tool]" in text and "call: add_intention" in text


def test_sections_reflect_profiles_and_intentions_and_stay_byte_stable(
    client: TestClient,
) -> None:
    memory(client, "profile", name="about_me", body="I am a careful coding assistant.")
    memory(
        client,
        "profile",
        name="ou_1",
        body="Alice runs the release train.",
        fields={"department": "platform"},
    )
    memory(client, "profile", name="ou_2", body="Bob owns the database.\nLikes tea.")
    first = prompt(client, speakerUserId="ou_1", participantUserIds=["ou_1", "ou_2"])
    identity = first["identity"]["text"]
    assert "I am a careful coding assistant." in identity
    assert '"ou_1" ("platform")\n> Alice runs the release train.' in identity
    assert '- "ou_2": "Bob owns the database."' in identity and "Likes tea" not in identity
    assert first["intentions"]["text"] == ""
    assert "## Recall discipline" in first["discipline"]["text"]
    again = prompt(
        client,
        speakerUserId="ou_1",
        participantUserIds=["ou_1", "ou_2"],
        currentMessage="something else entirely",
    )
    for name in ("identity", "intentions", "discipline"):
        assert again[name] == first[name]  # byte-identical, whatever the message
    call(
        client,
        "add_intention",
        args={"what": "Renew the domain", "due": "2026-10-04", "priority": "high"},
    )
    changed = prompt(client, speakerUserId="ou_1", participantUserIds=["ou_1", "ou_2"])
    assert changed["identity"] == first["identity"]
    assert changed["intentions"]["hash"] != first["intentions"]["hash"]
    assert (
        '📅 soon [pi-20261003-001] "Renew the domain" (due 2026-10-04)'
        in changed["intentions"]["text"]
    )


def test_a_page_long_intention_is_cut_where_it_is_listed(
    client: TestClient, data_dir: Path
) -> None:
    """A time probe: a hand-written intention whose first body line was 7 MB made the
    prompt's intentions section 7 MB (and list_intentions the same)."""
    folder = data_dir / "memory/intentions/pi-20261001-101"
    folder.mkdir(parents=True)
    long = "call " + "the plumber " * 100_000
    (folder / "INTENT.md").write_text(f"---\nstatus: open\ndue: 2026-10-02\n---\n{long}\n")
    for n in range(12):
        call(client, "add_intention", args={"what": f"task {n}", "due": "2026-10-01"})
    section = prompt(client)["intentions"]["text"]
    assert len(section) < 5_000, len(section)
    assert '[pi-20261001-101] "call the plumber the plumber' in section and "…" in section
    assert "- … and 3 more open intentions, not shown: list_intentions" in section
    listed = call(client, "list_intentions")
    assert len(listed) < 10_000 and "13 open intentions" in listed
    whole = client.get("/v1/memories/intention/pi-20261001-101").json()
    assert len(whole["body"]) > len(long)  # the entry itself is whole


def test_due_and_cue_with_a_moving_clock(client: TestClient, clock: ManualClock) -> None:
    call(client, "add_intention", args={"what": "Send the report", "due": "2026-10-20"})
    call(client, "add_intention", args={"what": "Book the passport photo", "cue": "passport, 护照"})
    call(
        client,
        "add_intention",
        args={"what": "Renew insurance", "due": "2026-12-01", "cue": "insurance"},
    )
    text = prompt(client)["intentions"]["text"]
    assert "Send the report" not in text  # 17 days out
    assert '• [pi-20261003-002] "Book the passport photo"' in text
    assert "insurance" not in text.casefold()
    cued = prompt(client, currentMessage="Is my INSURANCE still valid?")["cued"]["text"]
    assert '💡 [pi-20261003-003] "Renew insurance' in cued
    clock.advance(dt.timedelta(days=15))
    assert "📅 soon [pi-20261003-001]" in prompt(client)["intentions"]["text"]
    clock.advance(dt.timedelta(days=10))
    assert "⏰ due [pi-20261003-001]" in prompt(client)["intentions"]["text"]
    call(client, "complete_intention", args={"intention_id": "pi-20261003-001"})
    assert "pi-20261003-001" not in prompt(client)["intentions"]["text"]


def test_templates_in_memory_are_escaped(client: TestClient) -> None:
    memory(client, "profile", name="about_me", body="Call me {{agent_name}}; {{{x}}}")
    call(client, "add_intention", args={"what": "fill in {{user_name}}"})
    sections = prompt(client)
    for name in ("identity", "intentions"):
        assert "{{" not in sections[name]["text"] and "}}" not in sections[name]["text"]
    assert "{ {agent_name} }" in sections["identity"]["text"]


def test_tool_list_and_schemas(client: TestClient) -> None:
    tools = {tool["name"]: tool for tool in client.get("/v1/tools").json()["tools"]}
    assert set(tools) == {
        "recall_memories", "search_episodes", "search_recent_conversation", "search_knowledge",
        "add_intention", "complete_intention", "cancel_intention", "list_intentions", "dream_now",
    }  # fmt: skip
    recall = tools["recall_memories"]
    assert recall["parameters"]["required"] == ["query"]
    assert recall["parameters"]["properties"]["limit"] == {
        "type": "integer", "description": "How many memories to return (1-20).", "default": 5,
        "minimum": 1, "maximum": 20,
    }  # fmt: skip
    # A count is checked as the schema says (it was coerced from true, and clamped).
    for bad in (True, 0, 21, -5, 2.5):
        refused = client.post(
            "/v1/tools/recall_memories", json={"args": {"query": "deploy", "limit": bad}}
        )
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["code"] == "invalid_arguments"
        assert [e["field"] for e in refused.json()["errors"]] == ["limit"]
    said = client.post("/v1/tools/recall_memories", json={"args": {"query": "x", "limit": "5"}})
    assert said.status_code == 200, said.text  # a number a model wrote as text is read
    assert recall["concurrent"] is True and tools["add_intention"]["concurrent"] is False
    assert "types" not in recall["parameters"]["required"]
    assert "default" not in recall["parameters"]["properties"]["types"]  # no "" defaults


def test_bad_tool_calls(client: TestClient) -> None:
    assert_problem(client.post("/v1/tools/forget_everything", json={}), 404, "not_found")
    missing = client.post("/v1/tools/recall_memories", json={"args": {}})
    body = assert_problem(missing, 422, "invalid_arguments")
    assert body["errors"] == [{"field": "query", "message": "Field required"}]
    wrong = client.post("/v1/tools/recall_memories", json={"args": {"query": "x", "limit": "many"}})
    assert "limit" in assert_problem(wrong, 422, "invalid_arguments")["detail"]
    extra = client.post("/v1/tools/list_intentions", json={"args": {"surprise": 1}})
    assert "surprise" in assert_problem(extra, 422, "invalid_arguments")["detail"]


@pytest.mark.parametrize(
    "tool",
    ["recall_memories", "search_knowledge", "search_episodes", "search_recent_conversation"],
)
def test_a_tool_s_query_is_as_long_as_recall_s_at_most(client: TestClient, tool: str) -> None:
    # The tools took a query up to the body's limit (1 MiB): 100k words cost a minute and a
    # half of CPU in one call, where POST /v1/recall refuses more than 2,000 characters.
    spec = next(t for t in client.get("/v1/tools").json()["tools"] if t["name"] == tool)
    assert spec["parameters"]["properties"]["query"]["maxLength"] == 2000
    longest = client.post(f"/v1/tools/{tool}", json={"args": {"query": "w " * 1000}})
    assert longest.status_code == 200, longest.text
    longer = client.post(f"/v1/tools/{tool}", json={"args": {"query": "w " * 1000 + "x"}})
    body = assert_problem(longer, 422, "invalid_arguments")
    assert body["errors"][0]["field"] == "query"
    assert_problem(
        client.post("/v1/tools/search_episodes", json={"args": {"since": "yesterday"}}),
        400,
        "invalid_input",
    )
    assert_problem(
        client.post("/v1/tools/recall_memories", json={"args": {"query": "x", "types": "dreams"}}),
        400,
        "invalid_input",
    )
    gone = client.post(
        "/v1/tools/complete_intention", json={"args": {"intention_id": "pi-19990101-001"}}
    )
    assert gone.status_code == 200, gone.text
    assert gone.json()["isError"] is True and "no open intention" in gone.json()["result"]
    listed = client.post("/v1/tools/list_intentions", json={"args": {}}).json()
    assert listed == {"result": "No open intentions.", "isError": False}


def test_intention_tools_round_trip(client: TestClient) -> None:
    added = call(
        client, "add_intention", args={"what": "Ask Bob about backups", "due": "2026-10-05"}
    )
    assert "pi-20261003-001" in added
    assert '[pi-20261003-001] "Ask Bob about backups" (due 2026-10-05, mid)' in call(
        client, "list_intentions"
    )
    assert "Cancelled pi-20261003-001" in call(
        client, "cancel_intention", args={"intention_id": "pi-20261003-001"}
    )
    assert call(client, "list_intentions") == "No open intentions."
    archived = client.get(
        "/v1/memories/intention/pi-20261003-001", params={"archived": "true"}
    ).json()
    assert (
        archived["meta"]["status"] == "cancelled"
        and archived["meta"]["archive_reason"] == "cancelled"
    )
    assert "pi-20261003-002" in call(
        client, "add_intention", args={"what": "again"}
    )  # never re-used


def test_recall_reinforces_and_tracks_what_was_seen(client: TestClient) -> None:
    for number in range(8):
        memory(
            client,
            "knowledge",
            name=f"garden-{number}",
            description=f"garden tip {number}",
            body=f"tomato garden watering advice number {number}",
        )
    first = call(
        client, "recall_memories", args={"query": "tomato garden", "limit": 4}, sessionId="s1"
    )
    shown = {
        line.split("] ")[1].split(" —")[0] for line in first.splitlines() if line.startswith("[")
    }
    assert len(shown) == 4
    second = call(
        client, "recall_memories", args={"query": "tomato garden", "limit": 4}, sessionId="s1"
    )
    again = [
        line.split("] ")[1].split(" —")[0] for line in second.splitlines() if line.startswith("[")
    ]
    assert (
        again[:3] == sorted(shown, key=lambda n: again.index(n) if n in again else 99)[:3]
        or set(again[:3]) <= shown
    )
    assert again[3] not in shown  # the fourth slot brings something new
    assert client.post("/v1/sessions/s1/compacted").json() == {"forgotten": True}
    third = call(
        client, "recall_memories", args={"query": "tomato garden", "limit": 4}, sessionId="s1"
    )
    assert third == first  # compaction forgot what was shown
    entry = client.get(f"/v1/memories/knowledge/{again[0]}").json()
    assert entry["score"] > 0.5  # used through a tool: reinforced


def test_project_scoping(client: TestClient) -> None:
    memory(
        client,
        "knowledge",
        name="alpha-deploy",
        body="deploy with make ship",
        fields={"project": "alpha"},
    )
    memory(
        client,
        "knowledge",
        name="beta-deploy",
        body="deploy with make ship",
        fields={"project": "beta"},
    )
    memory(client, "knowledge", name="global-deploy", body="deploy only on weekdays, make ship")
    found = call(client, "recall_memories", args={"query": "make ship deploy"}, project="alpha")
    assert "alpha-deploy" in found and "global-deploy" in found and "beta-deploy" not in found
    everything = call(client, "recall_memories", args={"query": "make ship deploy"})
    assert "beta-deploy" in everything
    call(client, "add_intention", args={"what": "alpha thing"}, project="alpha")
    call(client, "add_intention", args={"what": "beta thing"}, project="beta")
    alpha = prompt(client, project="alpha")["intentions"]["text"]
    assert "alpha thing" in alpha and "beta thing" not in alpha


def test_search_recent_conversation(client: TestClient) -> None:
    old = [{"role": "user", "text": "The staging password rotates every Monday."}]
    client.post("/v1/sessions/old/messages", json={"messages": old})
    client.post("/v1/sessions/old/close")
    now = [{"role": "user", "text": f"message number {n} about lunch"} for n in range(30)]
    now.append({"role": "agent", "text": "The newest line, about the rollout."})
    client.post("/v1/sessions/cur/messages", json={"messages": now})
    latest = call(client, "search_recent_conversation", args={"limit": 5}, sessionId="cur")
    assert latest.splitlines()[-1].endswith('agent: "The newest line, about the rollout."')
    assert "number 26" in latest and "number 25" not in latest
    found = call(client, "search_recent_conversation", args={"query": "password"}, sessionId="cur")
    assert "The staging password rotates every Monday." in found
    small = client.post(
        "/v1/tools/search_recent_conversation", json={"args": {"limit": 31}, "sessionId": "cur"}
    ).json()["result"]
    assert small.splitlines()[-1].endswith('The newest line, about the rollout."')


def test_dream_now_closes_open_logs(client: TestClient, data_dir: Path) -> None:
    client.post(
        "/v1/sessions/open-one/messages", json={"messages": [{"role": "user", "text": "hi there"}]}
    )
    answer = call(client, "dream_now")
    assert "Closed 1 open session log" in answer
    assert "Dream maintenance (no_llm: bridge: not connected)" in answer  # no host connected
    log = next((data_dir / "memory/session-log").glob("*.md")).read_text()
    assert "end_time:" in log and "status: pending" in log


def test_a_user_id_that_is_the_agent_s_profile_name_shows_no_profile(client: TestClient) -> None:
    # `about_me` is the agent's own profile's name: as a speaker it showed the agent's
    # self-image a second time, as a person's.
    memory(client, "profile", name="about_me", body="I am a careful coding assistant.")
    memory(client, "profile", name="ou_2", body="Bob owns the database.")
    identity = prompt(client, speakerUserId="about_me", participantUserIds=["about_me", "ou_2"])[
        "identity"
    ]["text"]
    assert identity.count("I am a careful coding assistant.") == 1
    assert '"about_me"' not in identity
    assert '- "ou_2": "Bob owns the database."' in identity


def test_an_intention_s_cues_and_source_have_one_rule_at_every_door(client: TestClient) -> None:
    # The tool took 9,000 cues (each prompt then took 9 s) and a source with a line break,
    # which POST /v1/intentions refused.
    for args in (
        {"what": "renew", "cue": "c," * 300},
        {"what": "renew", "source": "a\nb"},
        {"what": "renew", "source": "s" * 201},
    ):
        answer = client.post("/v1/tools/add_intention", json={"args": args})
        assert answer.status_code == 400, answer.text
    # The memories route, the intentions route and PATCH took what the tool refused, and
    # no door refused a control character in a cue.
    for fields in (
        {"cue": "c" * 501},
        {"cue": ["c" * 250, "d" * 250]},
        {"cue": "a\u0001b, c"},
        {"cue": ["ok", 5]},
        {"cue": True},
        {"source": "x\ny"},
    ):
        answer = client.post("/v1/memories/intention", json={"description": "x", "fields": fields})
        assert_problem(answer, 400, "invalid_input")
    answer = client.post("/v1/intentions", json={"what": "renew", "cue": "a\u001bb"})
    assert answer.status_code in (400, 422), answer.text
    assert client.get("/v1/intentions").json()["items"] == []
    made = client.post("/v1/intentions", json={"what": "renew", "cue": "renew"}).json()["id"]
    patched = client.patch(f"/v1/memories/intention/{made}", json={"fields": {"cue": "x" * 600}})
    assert_problem(patched, 400, "invalid_input")
    purge = client.post("/v1/memories/knowledge/x/purge?confirm=x", json={"scrubLogs": "yes"})
    assert purge.status_code == 422  # a string is no boolean, as everywhere else


def test_an_intention_id_freed_below_the_highest_is_never_taken_again(
    client: TestClient, data_dir: Path
) -> None:
    # The first number no folder held was taken: a purged (or deleted) intention's id went
    # to a new one, and history and a quoted id then mixed the two.
    made = [client.post("/v1/intentions", json={"what": f"do {n}"}).json()["id"] for n in range(3)]
    purged = client.post(f"/v1/memories/intention/{made[1]}/purge?confirm={made[1]}")
    assert purged.status_code == 200, purged.text
    fresh = client.post("/v1/intentions", json={"what": "a brand new one"}).json()["id"]
    assert fresh not in made and fresh.endswith("-004")
    # A file probe: a folder named with 88 nines made every new one that day a 400.
    stem = made[0].rsplit("-", 1)[0]
    (data_dir / "memory/intentions" / f"{stem}-{'9' * 88}").mkdir()
    after = client.post("/v1/intentions", json={"what": "still possible"})
    assert after.status_code == 201, after.text
    assert after.json()["id"] == f"{stem}-005"


def test_cues_given_as_a_list_are_kept_as_a_list_and_fire(client: TestClient) -> None:
    # A list was stored as its Python text, "['gamma', 'rollout']": cues "['gamma'" and
    # "'rollout']", which no message matches.
    made = client.post(
        "/v1/memories/intention",
        json={
            "description": "Ask about the gamma rollout",
            "fields": {"cue": [" gamma ", "rollout"], "due": "2027-06-01"},  # shown on a cue
        },
    )
    assert made.status_code == 201, made.text
    assert made.json()["meta"]["cue"] == ["gamma", "rollout"]
    cued = prompt(client, currentMessage="the gamma build is done")["cued"]["text"]
    assert "Ask about the gamma rollout" in cued
    listed = call(client, "list_intentions", args={})
    assert "gamma" in listed and "['gamma'" not in listed
    # One an older somnid stored as the list's Python text fires as its cues too.
    old = client.patch(
        f"/v1/memories/intention/{made.json()['name']}",
        json={"fields": {"cue": "['delta', 'rollout']"}},
    )
    assert old.status_code == 200 and old.json()["meta"]["cue"] == "['delta', 'rollout']"
    cued = prompt(client, currentMessage="the delta build is done")["cued"]["text"]
    assert "Ask about the gamma rollout" in cued
    # Text that reads as no flat list of texts stays text (it failed every prompt: a 500).
    for odd in ("[{[]: 1}]", "[{1,[2]}]", "[1, 'a']", "[" * 240 + "]" * 240):
        answer = client.patch(
            f"/v1/memories/intention/{made.json()['name']}", json={"fields": {"cue": odd}}
        )
        assert answer.status_code == 200, answer.text
        assert client.post("/v1/prompt", json={"currentMessage": "x"}).status_code == 200
        assert client.get("/v1/intentions").status_code == 200


@pytest.mark.parametrize("user", ["Alice Smith", "carol@example.com", "_bob", "a--b", "\uff46ull"])
def test_a_profile_made_through_the_api_for_a_user_id_is_the_one_the_prompt_shows(
    client: TestClient, user: str
) -> None:
    # It was stored as the id's slug (Alice-Smith), which the prompt never read: it shows
    # the profile named as the dreams name it. And the id itself was a 400 on reading.
    made = client.post("/v1/memories/profile", json={"name": user, "body": "Runs finance."})
    assert made.status_code == 201, made.text
    assert made.json()["meta"]["user_id"] == user
    identity = prompt(client, speakerUserId=user)["identity"]["text"]
    assert "Runs finance." in identity
    for asked in (user, made.json()["name"]):
        read = client.get(f"/v1/memories/profile/{quote(asked)}")
        assert read.status_code == 200 and read.json()["name"] == made.json()["name"], read.text
    changed = client.patch(f"/v1/memories/profile/{quote(user)}", json={"body": "Runs payroll."})
    assert changed.status_code == 200, changed.text
    assert "Runs payroll." in prompt(client, speakerUserId=user)["identity"]["text"]
    again = client.post("/v1/memories/profile", json={"name": user, "body": "twice"})
    assert_problem(again, 409, "conflict")


def test_an_id_that_only_looks_like_the_agent_s_profile_is_refused(client: TestClient) -> None:
    answer = client.post("/v1/memories/profile", json={"name": " about_me", "body": "x"})
    assert_problem(answer, 400, "invalid_name")
    made = client.post("/v1/memories/profile", json={"name": "about_me", "body": "I am an agent."})
    assert made.status_code == 201 and "user_id" not in made.json()["meta"]
    # Read and written through such an id, it was the agent's own profile (the review).
    for lookalike in (" about_me", "\uff41\uff42\uff4f\uff55\uff54_\uff4d\uff45"):
        path = f"/v1/memories/profile/{quote(lookalike)}"
        assert_problem(client.patch(path, json={"body": "overwritten"}), 400, "invalid_name")
        assert_problem(client.get(path), 400, "invalid_name")
    assert client.get("/v1/memories/profile/about_me").json()["body"].strip() == "I am an agent."


def test_a_profile_kept_under_the_former_name_is_the_user_s_everywhere(
    client: TestClient,
) -> None:
    # The prompt showed it, but the id read a 404 and a create made a second, empty one
    # that the prompt then showed instead (the review).
    kept = client.post(
        "/v1/memories/profile",
        json={"name": "bob", "body": "Bob runs the database.", "fields": {"user_id": "_bob"}},
    )
    assert kept.status_code == 201, kept.text
    assert client.get(f"/v1/memories/profile/{quote('_bob')}").json()["name"] == "bob"
    assert_problem(client.post("/v1/memories/profile", json={"name": "_bob"}), 409, "conflict")
    assert "Bob runs the database." in prompt(client, speakerUserId="_bob")["identity"]["text"]
