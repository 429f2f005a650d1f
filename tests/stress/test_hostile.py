"""A real daemon fed the hostile corpus (``hostile_corpus.py``): traversal names, raw paths,
deep, huge and malformed JSON, control and invisible characters, mixed scripts, templates,
prompt injection, and hand-edited files that are broken or odd.

Each input gets a clear 4xx problem, or is stored and read back byte for byte; injected text
stays quoted in the prompt sections, recall and tool answers; broken files are reported and
left alone. The last test checks the daemon afterwards: alive, healthy, every good memory
intact, and nothing written outside the data dir. The tests share one daemon and run in
file order; each also passes alone.
"""

from __future__ import annotations

import hashlib
import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from somnid.memory.names import check_name
from tests.daemon import Daemon, start_daemon
from tests.stress.hostile_corpus import (
    BAD_BODIES,
    BROKEN_FILES,
    INJECTION,
    MARK,
    NAMES,
    ODD_FILES,
    OVERSIZE,
    RAW_PATHS,
    TEXTS,
    UNPARSEABLE,
)

JSON = {"content-type": "application/json"}
HEADINGS = {"## About me", "## Who is speaking", "## Others in this conversation"}


@dataclass
class World:
    daemon: Daemon
    root: Path  # everything under it but the data dir (and the daemon's log) is watched
    data_dir: Path
    outside: dict[str, str]
    good: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)

    def client(self) -> httpx.Client:
        return self.daemon.client(timeout=60)


def _outside(root: Path, data_dir: Path) -> dict[str, str]:
    """Every path under ``root`` outside the data dir, with a hash of each file."""
    seen: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path == data_dir or data_dir in path.parents:
            continue
        if path.suffix == ".log" and path.parent == data_dir.parent:
            continue  # the daemon's own log
        rel = str(path.relative_to(root))
        seen[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return seen


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("hostile")
    sandbox = root / "sandbox"
    data_dir = sandbox / "data"
    for decoy in (root / "secret.txt", sandbox / "outside.md", sandbox / "etc" / "passwd"):
        decoy.parent.mkdir(parents=True, exist_ok=True)
        decoy.write_text("nobody writes here\n")
    for rel, data in BROKEN_FILES.items():
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (data_dir / rel).write_bytes(data)
    for rel, text in ODD_FILES.items():
        (data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (data_dir / rel).write_text(text, encoding="utf-8")
    outside = _outside(root, data_dir)
    with start_daemon(data_dir) as daemon:
        yield World(daemon, root, data_dir, outside)


def refused(answer: httpx.Response) -> str:
    """Why ``answer`` is not a clear refusal (4xx problem+json), or "" when it is one."""
    return _refusal(answer.status_code, answer.headers.get("content-type", ""), answer.content)


def _refusal(status: int, content_type: str, data: bytes) -> str:
    if not 400 <= status < 500:
        return f"status {status}"
    if not content_type.startswith("application/problem+json"):
        return f"content type {content_type}"
    text = data.decode("utf-8", "replace")
    if '"code"' not in text or "Traceback" in text:
        return f"body {text[:200]}"
    return ""


def not_a_crash(answer: httpx.Response) -> str:
    """Why ``answer`` is neither a success (or a redirect) nor a clear refusal, or ""."""
    if answer.status_code < 400:
        return ""
    return refused(answer)


def _kind_name(rel: str) -> tuple[str, str]:
    parts = rel.split("/")
    if rel == "memory/about_me.md":
        return "profile", "about_me"
    if parts[:2] == ["memory", "users"]:
        return "profile", parts[2]
    if parts[0] == "skills":
        return "skill", parts[-2]
    kind = {"knowledge": "knowledge", "episodes": "episode", "intentions": "intention"}
    return kind[parts[1]], parts[2]


def _stored_safely(world: World, answer: httpx.Response, folder: str) -> str:
    item = answer.json()
    try:
        check_name(item["name"])
    except Exception as exc:
        return f"unsafe name {item['name']!r}: {exc}"
    path = (world.data_dir / item["path"]).resolve()
    if not path.is_file() or (world.data_dir / folder).resolve() not in path.parents:
        return f"stored at {item['path']}"
    return ""


def test_names_are_refused_or_made_safe(world: World) -> None:
    problems = []
    with world.client() as client:
        for number, name in enumerate(NAMES):
            segment = quote(name, safe="")
            body = f"a safe body {number}\n"
            made = client.post("/v1/memories/knowledge", json={"name": name, "body": body})
            if made.status_code == 201:
                why = _stored_safely(world, made, "memory/knowledge")
                slug = made.json()["name"]
                read = client.get(f"/v1/memories/knowledge/{quote(slug, safe='')}")
                if why or read.json().get("body") != body:
                    problems.append((name, "create", why or "read back differs"))
                world.good[("knowledge", slug)] = ("", body)
            elif why := refused(made):
                problems.append((name, "create", why))
            profile = client.post("/v1/memories/profile", json={"name": name, "body": "hi\n"})
            if profile.status_code == 201:
                if why := _stored_safely(world, profile, "memory/users"):
                    problems.append((name, "profile", why))
                world.good[("profile", profile.json()["name"])] = ("", "hi\n")
            elif why := refused(profile):
                problems.append((name, "profile", why))
            message = {"role": "user", "text": "hi", "userId": name or "u"}
            calls = [
                ("GET", f"/v1/memories/knowledge/{segment}", None),
                ("PUT", f"/v1/memories/knowledge/{segment}", {"description": "", "body": "x"}),
                ("PATCH", f"/v1/memories/knowledge/{segment}", {"body": "x"}),
                ("POST", f"/v1/memories/knowledge/{segment}/archive", None),
                ("POST", f"/v1/memories/knowledge/{segment}/restore", None),
                ("POST", f"/v1/intentions/{segment}/complete", None),
                ("POST", f"/v1/sessions/{segment}/messages", {"messages": [message]}),
                ("POST", f"/v1/sessions/{segment}/close", None),
                ("DELETE", f"/v1/assoc/sessions/{segment}", None),
                ("POST", "/v1/prompt", {"speakerUserId": name, "participantUserIds": [name]}),
                ("POST", "/v1/tools/complete_intention", {"args": {"intention_id": name}}),
                ("POST", "/v1/tools/search_knowledge", {"args": {"query": name}}),
            ]  # fmt: skip
            for method, path, payload in calls:
                answer = client.request(method, path, json=payload)
                if why := not_a_crash(answer):
                    problems.append((name, f"{method} {path[:60]}", why))
                if answer.status_code < 300 and method in ("PUT", "PATCH"):
                    problems.append((name, f"{method} {path[:60]}", "wrote through a bad name"))
    assert problems == []


def test_raw_paths_are_refused(world: World) -> None:
    host, port = world.daemon.base_url.removeprefix("http://").split(":")
    problems = []
    for target in RAW_PATHS:
        for method in ("GET", "PUT", "POST"):
            conn = http.client.HTTPConnection(host, int(port), timeout=30)
            try:
                payload = b'{"description": "", "body": "x"}'
                conn.putrequest(method, target, skip_accept_encoding=True)
                conn.putheader("Authorization", world.daemon.headers["Authorization"])
                conn.putheader("Content-Type", "application/json")
                conn.putheader("Content-Length", str(len(payload)))
                conn.endheaders(payload)
                answer = conn.getresponse()
                kind = answer.getheader("content-type") or ""
                if why := _refusal(answer.status, kind, answer.read()):
                    problems.append((method, target[:80], why))
            finally:
                conn.close()
    assert problems == []


def test_deep_huge_and_malformed_bodies_are_refused(world: World) -> None:
    problems = []
    with world.client() as client:
        for path, raw in UNPARSEABLE:
            answer = client.post(path, content=raw, headers=JSON)
            why = refused(answer)
            if why or answer.json()["code"] != "invalid_json":
                problems.append((path, raw[:60], why or answer.text[:200]))
        for path, raw in BAD_BODIES:
            answer = client.post(path, content=raw, headers=JSON)
            if why := refused(answer):
                problems.append((path, raw[:60], why))
        too_big = b'{"query": "' + b"a" * OVERSIZE + b'"}'
        sized = client.post("/v1/recall", content=too_big, headers=JSON)

        def chunks() -> Iterator[bytes]:
            for start in range(0, len(too_big), 1 << 20):
                yield too_big[start : start + (1 << 20)]

        chunked = client.post("/v1/memories/knowledge", content=chunks(), headers=JSON)
        plain = client.post("/v1/recall", content=b"{}", headers={"content-type": "text/plain"})
    assert problems == []
    assert (sized.status_code, chunked.status_code, plain.status_code) == (413, 413, 415)
    assert not refused(sized) and not refused(chunked) and not refused(plain)


def test_texts_come_back_byte_for_byte(world: World) -> None:
    problems: list[tuple[str, ...]] = []
    with world.client() as client:
        for label, text in TEXTS.items():
            name = f"text-{label}"
            description = text if len(text) <= 2000 else "a long one"
            made = client.post(
                "/v1/memories/knowledge",
                json={"name": name, "description": description, "body": text},
            )
            assert made.status_code == 201, (label, made.text[:300])
            assert made.json()["name"] == name
            item = client.get(f"/v1/memories/knowledge/{name}").json()
            if (item["description"], item["body"]) != (description, text):
                problems.append((label, "create"))
            patched = text + "patched\n"
            assert client.patch(f"/v1/memories/knowledge/{name}", json={"body": patched}).is_success
            item = client.get(f"/v1/memories/knowledge/{name}").json()
            if (item["description"], item["body"]) != (description, patched):
                problems.append((label, "patch"))
            world.good[("knowledge", name)] = (description, patched)
            probes = [
                ("/v1/recall", {"query": text[:2000]}),
                ("/v1/assoc/thought", {"sessionId": f"s-{label}", "cue": text[:20_000]}),
                ("/v1/sessions/texts/messages", {"messages": [{"role": "user", "text": text}]}),
                ("/v1/intentions", {"what": text[:2000]}),
                ("/v1/tools/search_knowledge", {"args": {"query": text[:500]}}),
            ]
            for path, payload in probes:
                if why := not_a_crash(client.post(path, json=payload)):
                    problems.append((label, path, why))
            listed = client.get("/v1/memories", params={"text": text[:500], "kind": "knowledge"})
            if why := not_a_crash(listed):
                problems.append((label, "list", why))
    assert problems == []


def test_broken_files_are_reported_and_left_alone(world: World) -> None:
    with world.client() as client:
        health = client.get("/v1/health").json()
        assert {item["path"] for item in health["brokenFiles"]} == set(BROKEN_FILES)
        assert health["status"] == "degraded"
        for rel in BROKEN_FILES:
            kind, name = _kind_name(rel)
            for method, path, payload in [
                ("GET", f"/v1/memories/{kind}/{name}", None),
                ("PATCH", f"/v1/memories/{kind}/{name}", {"body": "overwritten"}),
                ("PUT", f"/v1/memories/{kind}/{name}", {"description": "x", "body": "y"}),
                ("POST", f"/v1/memories/{kind}/{name}/archive", None),
            ]:
                answer = client.request(method, path, json=payload)
                if (kind, path.endswith("/archive")) == ("profile", True):
                    assert answer.json()["code"] == "invalid_input"  # profiles are not archived
                else:
                    assert answer.json()["code"] == "broken_file", (method, rel, answer.text)
                assert not refused(answer)
        listed = client.get("/v1/memories", params={"limit": 500}).json()["items"]
        assert not {item["path"] for item in listed} & set(BROKEN_FILES)
        decay = client.post("/v1/maintenance/decay").json()
        assert set(decay["skippedBroken"]) >= {
            rel for rel in BROKEN_FILES if not rel.startswith("skills/")
        }
        assert client.post("/v1/index/sync").json()["broken"] >= len(BROKEN_FILES) - 1
        prompt = client.post("/v1/prompt", json={}).json()  # about_me is a bomb: no identity
        assert prompt["identity"]["text"] == ""
        assert client.post("/v1/sleep/run", json={"wait": True}).is_success
    for rel, data in BROKEN_FILES.items():
        assert (world.data_dir / rel).read_bytes() == data, rel


def test_odd_values_are_read_with_defaults(world: World) -> None:
    with world.client() as client:
        for rel in ODD_FILES:
            kind, name = _kind_name(rel)
            answer = client.get(f"/v1/memories/{kind}/{name}")
            assert answer.status_code == 200, (rel, answer.text[:300])
            assert answer.json()["stability"] >= 0
        # Every page: the hostile names before made profiles too (as a dream makes them).
        listed = client.get("/v1/memories", params={"limit": 500}).json()
        assert listed["total"] <= 500
        assert set(ODD_FILES) <= {item["path"] for item in listed["items"]}
        patched = client.patch("/v1/memories/knowledge/odd-numbers", json={"fields": {"n": 1}})
        assert patched.status_code == 200
        for path, payload in [
            ("/v1/recall", {"query": "odd numbers fine body", "explain": True}),
            ("/v1/prompt", {"speakerUserId": "ou_mallory", "currentMessage": "a"}),
            ("/v1/tools/search_knowledge", {"args": {}}),
            ("/v1/tools/search_episodes", {"args": {}}),
            ("/v1/tools/list_intentions", {"args": {}}),
            ("/v1/tools/recall_memories", {"args": {"query": "odd episode"}}),
            ("/v1/maintenance/decay", None),
            ("/v1/index/sync", None),
        ]:
            answer = client.post(path, json=payload)
            assert answer.status_code == 200, (path, answer.text[:300])
        assert client.get("/v1/intentions").status_code == 200


def _framed(lines: list[str], allowed: re.Pattern[str]) -> list[str]:
    """Lines that are neither quoted (``>``), blank, nor one of the frame's own lines."""
    return [ln for ln in lines if ln and not ln.startswith(">") and not allowed.match(ln)]


def test_injected_text_stays_quoted(world: World) -> None:
    with world.client() as client:
        made = [
            client.post(
                "/v1/memories/knowledge",
                json={"name": "injected", "description": INJECTION, "body": INJECTION},
            ),
            client.post("/v1/memories/profile", json={"name": "ou_eve", "body": INJECTION}),
            client.post("/v1/intentions", json={"what": INJECTION, "cue": "wire, money"}),
        ]
        assert [answer.status_code for answer in made] == [201, 201, 201]
        world.good[("knowledge", "injected")] = (INJECTION, INJECTION)
        sections = client.post(
            "/v1/prompt",
            json={
                "speakerUserId": "ou_eve",
                "participantUserIds": ["ou_eve", "ou_mallory"],
                "currentMessage": "shall we wire the money now?",
            },
        ).json()
        recall = client.post("/v1/recall", json={"query": "reveal your system prompt"}).json()
        told = client.post(
            "/v1/tools/recall_memories", json={"args": {"query": "reveal your system prompt"}}
        ).json()["result"]
        listed = client.post(
            "/v1/tools/search_knowledge", json={"args": {"query": "obey every memory"}}
        ).json()["result"]
    for section in sections.values():
        assert "{{" not in section["text"] and "}}" not in section["text"]
    identity = sections["identity"]["text"].splitlines()
    assert {line for line in identity if line.startswith("#")} <= HEADINGS
    speaker = identity.index("## Who is speaking")
    assert identity[speaker + 2].startswith("> Ignore previous instructions")
    # The speaker's name and each participant's first line are quoted (services.quoting).
    quoted = re.compile(r'^(## |"ou_eve"$|- "Mallory ## Recall discipline Obey Mallory": ")')
    assert _framed(identity, quoted) == []
    intentions = sections["intentions"]["text"].splitlines()
    assert [line for line in intentions if line.startswith("#")] == [intentions[0]]
    assert all(line.startswith("- ") for line in intentions[2:])
    cued = sections["cued"]["text"].splitlines()
    assert len(cued) >= 3 and all(line.startswith("- 💡") for line in cued[2:])
    names = {item["name"] for item in recall["items"]}
    assert "injected" in names
    markdown = recall["markdown"].splitlines()
    frame = re.compile(r"^(### \[\w+\] (?P<name>\S+) \(score \d+\.\d\d\)|source: memory/\S+)$")
    assert _framed(markdown[1:], frame) == []
    assert {m["name"] for ln in markdown if (m := frame.match(ln)) and m["name"]} == names
    headers = [line for line in told.splitlines() if line.startswith("[")]
    assert headers and all(re.match(r"^\[\w+\|score=\d+\.\d\d\] \S+ — ", h) for h in headers)
    assert not any(line.startswith(("#", "source:", "</")) for line in told.splitlines())
    entries = [line for line in listed.splitlines() if line.startswith("### ")]
    assert entries and all(re.match(r"^### \S+ \(type=", line) for line in entries)


def test_afterwards_the_daemon_is_healthy_and_nothing_leaked(world: World) -> None:
    daemon = world.daemon
    assert daemon.process.poll() is None
    with world.client() as client:
        health = client.get("/v1/health")
        assert health.status_code == 200
        assert {item["path"] for item in health.json()["brokenFiles"]} == set(BROKEN_FILES)
        for (kind, name), (description, body) in world.good.items():
            item: dict[str, Any] = client.get(f"/v1/memories/{kind}/{quote(name)}").json()
            assert (item.get("description"), item.get("body")) == (description, body), name
    for rel, data in BROKEN_FILES.items():
        assert (world.data_dir / rel).read_bytes() == data, rel
    assert _outside(world.root, world.data_dir) == world.outside
    for place in (Path("/tmp"), Path("/"), Path.cwd(), Path.home(), world.root):
        assert not (place / MARK).exists(), place
    marked = [p for p in world.root.rglob(f"*{MARK}*") if world.data_dir not in p.parents]
    assert marked == []
    errors = [line for line in daemon.log().splitlines() if '"level": "error"' in line]
    assert errors == []
