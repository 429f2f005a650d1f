"""Resource faults under the real daemon: a full disk, a read-only data dir, and an LLM
endpoint that hangs, trickles, fails or answers garbage in the middle of a dream.

Each time a write fails with a clear problem (507 ``disk_full``, 503 ``read_only``) and
changes nothing: every file byte for byte as before, no temp file, no empty folder, no
torn line in a log. Reads go on meanwhile, and writes work again once the fault is gone.
A dream meeting a bad LLM stops in bounded time with what it wrote whole, and the next
dream finishes the work.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from somnid.memory.kinds import Kind
from somnid.store.atomic import TEMP_PREFIX
from somnid.store.layout import Layout
from tests.daemon import start_daemon
from tests.dream.fakes import say, tool_call
from tests.llm_server import Answer, Fault, serve_llm
from tests.stress.llm import consolidate, dream_logs, knowledge_name, wait_for
from tests.stress.mounts import fill, read_only, tmpfs
from tests.stress.workload import check_files, parse_strictly, settled

PROBLEM = "application/problem+json"
Request = Awaitable[httpx.Response]
BIG = "x" * 4000  # a message at capture.maxMessageChars: 60 of them make a 240 kB append


def snapshot(root: Path) -> tuple[dict[str, bytes], set[str]]:
    """Every file's bytes and every folder but a kind's archive (made on the first
    archive, and may stay), without the derived index and the fillers."""
    layout = Layout(root)
    archives = {layout.archive_dir(kind) for kind in Kind if kind.archivable}
    files: dict[str, bytes] = {}
    folders: set[str] = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("index/") or path.name.startswith("filler-"):
            continue
        if rel.startswith(".git/objects/") and path.name.startswith("tmp_obj_"):
            continue  # git's own half-written object of a commit the full disk refused
        if path.is_dir():
            if path not in archives:
                folders.add(rel)
        else:
            files[rel] = path.read_bytes()
    return files, folders


def refused(answer: httpx.Response, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith(PROBLEM)
    problem = answer.json()
    assert problem["code"] == code and problem["status"] == status and problem["detail"]


async def remember(client: httpx.AsyncClient, name: str, body: str) -> str:
    """Create a knowledge entry; its ETag."""
    answer = await client.post(
        "/v1/memories/knowledge", json={"name": name, "description": f"{name} word", "body": body}
    )
    assert answer.status_code == 201, answer.text
    return answer.headers["ETag"]


async def say_to(client: httpx.AsyncClient, session: str, *texts: str) -> httpx.Response:
    messages = [{"role": "user", "text": text} for text in texts]
    return await client.post(f"/v1/sessions/{session}/messages", json={"messages": messages})


def writes(client: httpx.AsyncClient, etag: str) -> list[tuple[str, Callable[[], Request]]]:
    """One of each write somnid takes, as (what, request); all of them must fail."""
    keep = "/v1/memories/knowledge/keep"
    return [
        ("create", lambda: client.post("/v1/memories/knowledge", json={"name": "new"})),
        ("replace", lambda: client.put(keep, json={"description": "keep word", "body": "v2"})),
        ("patch", lambda: client.patch(keep, json={"body": "v3"}, headers={"If-Match": etag})),
        ("archive", lambda: client.post(keep + "/archive")),
        ("intention", lambda: client.post("/v1/memories/intention", json={"description": "tea"})),
        ("new session", lambda: say_to(client, "s2", "hello")),
        ("tool call", lambda: client.post("/v1/sessions/s1/tool-calls", json={"call": BIG})),
        ("big append", lambda: say_to(client, "s1", *[BIG] * 60)),
        ("close", lambda: client.post("/v1/sessions/s1/close")),
    ]


async def reads_work(client: httpx.AsyncClient, etag: str) -> None:
    keep = await client.get("/v1/memories/knowledge/keep")
    assert keep.status_code == 200 and keep.headers["ETag"] == etag
    assert keep.json()["body"].strip() == "v1"
    listed = (await client.get("/v1/memories")).json()
    assert "keep" in {item["name"] for item in listed["items"]}
    found = (await client.post("/v1/recall", json={"query": "keep word"})).json()
    assert "keep" in {item["name"] for item in found["items"]}
    # The agent's recall is a read too: its use, which it cannot note, is left unnoted.
    tool = await client.post("/v1/tools/recall_memories", json={"args": {"query": "keep word"}})
    assert tool.status_code == 200, tool.text
    assert "keep" in tool.json()["result"]
    for route in ("/v1/health", "/v1/index/status", "/v1/sleep/status"):
        assert (await client.get(route)).status_code == 200, route


async def writes_work(client: httpx.AsyncClient, etag: str) -> None:
    """After the fault: every write goes through, and is read back."""
    assert (await say_to(client, "s1", "back again")).status_code == 200
    assert (await client.post("/v1/sessions/s1/close")).json()["path"]
    await remember(client, "new", "written after the fault")
    keep = "/v1/memories/knowledge/keep"
    answer = await client.put(
        keep, json={"description": "keep word", "body": "v2"}, headers={"If-Match": etag}
    )
    assert answer.status_code == 200, answer.text
    assert (await client.post(keep + "/archive")).status_code == 200
    found = (await client.post("/v1/recall", json={"query": "written after the fault"})).json()
    assert [item["name"] for item in found["items"]][:1] == ["new"]


async def hand_edits_still_show(client: httpx.AsyncClient, root: Path) -> None:
    """The file watcher lived through the fault: a hand edit reaches recall."""
    path = Layout(root).entry_file(Kind.KNOWLEDGE, "new")
    path.write_text(path.read_text() + "\nA quokka was here.\n")
    deadline = time.monotonic() + 120  # a cap for a hang: a loaded machine is slow
    while time.monotonic() < deadline:
        found = (await client.post("/v1/recall", json={"query": "quokka"})).json()
        if "new" in {item["name"] for item in found["items"]}:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("a hand edit after the fault never reached recall")


async def storage_of(client: httpx.AsyncClient) -> tuple[str, str, str | None]:
    """Health's status, and its storage component's status and detail."""
    health = (await client.get("/v1/health")).json()
    return health["status"], health["storage"]["status"], health["storage"]["detail"]


async def caught_up(client: httpx.AsyncClient) -> None:
    """Until health is ok; only the index and history may be behind meanwhile."""
    deadline = time.monotonic() + 120  # a cap for a hang: a loaded machine is slow
    while (health := (await client.get("/v1/health")).json())["status"] != "ok":
        behind = {part for part in ("index", "history") if health[part]["status"] != "ok"}
        assert behind and health["storage"]["status"] == "ok", health
        assert time.monotonic() < deadline, health
        await asyncio.sleep(0.05)


async def test_a_full_disk_changes_nothing_and_service_resumes(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", "16m") as mnt, start_daemon(mnt) as daemon:
        async with daemon.async_client(timeout=30) as client:
            await settled(client)
            etag = await remember(client, "keep", "v1")
            assert (await say_to(client, "s1", "hello")).status_code == 200
            assert await storage_of(client) == ("ok", "ok", None)

            # History commits behind the writes: reading it commits what is pending, so no
            # commit lands between the snapshots below (it did, at load 10).
            await client.get("/v1/history", params={"limit": 1})
            # Nearly full: each write would fit in part only (a 240 kB append, 150 kB
            # entries): all refused, and the parts already written are taken back.
            fill(mnt, leave=64 * 1024)
            before = snapshot(mnt)
            keep = "/v1/memories/knowledge/keep"
            large = "y" * 150_000
            for answer in (
                await say_to(client, "s1", *[BIG] * 60),
                await client.post("/v1/memories/knowledge", json={"name": "big", "body": large}),
                await client.put(keep, json={"description": "keep word", "body": large}),
            ):
                refused(answer, 507, "disk_full")
            assert snapshot(mnt) == before
            overall, storage, detail = await storage_of(client)
            assert (overall, storage) == ("degraded", "degraded") and "disk_full" in str(detail)

            # Room for a small file, maybe not for the index behind it: the file is the
            # truth, so the write is acknowledged; the index catches up once it can.
            fill(mnt, leave=8 * 1024)
            await remember(client, "tight", "written when space ran out")
            tight = (await client.get("/v1/memories/knowledge/tight")).json()
            assert tight["body"].strip() == "written when space ran out"
            # Its commit, done or failed (the file watcher may meet the full disk meanwhile,
            # or later: either way nothing below may change).
            await client.get("/v1/history", params={"limit": 1})

            # Full to the last byte: every kind of write is refused the same way.
            fill(mnt)
            before = snapshot(mnt)
            for what, request in writes(client, etag):
                answer = await request()
                assert answer.status_code == 507, (what, answer.text)
                refused(answer, 507, "disk_full")
            await reads_work(client, etag)
            assert snapshot(mnt) == before
            assert list(mnt.rglob(f"{TEMP_PREFIX}*")) == []
            overall, storage, detail = await storage_of(client)
            assert (overall, storage) == ("degraded", "degraded") and "disk_full" in str(detail)

            # Space returns: so does every write, and the index catches up; storage says so
            # before any write succeeds (statvfs sees the space). What the index and history
            # could not take meanwhile they take by themselves (each retries every few
            # seconds): until then health says they are behind, and then it is ok.
            for filler in mnt.glob("filler-*"):
                filler.unlink()
            assert (await storage_of(client))[1:] == ("ok", None)
            await caught_up(client)
            await writes_work(client, etag)
            found = (await client.post("/v1/recall", json={"query": "tight word"})).json()
            assert "tight" in {item["name"] for item in found["items"]}
            await hand_edits_still_show(client, mnt)
        assert daemon.stop() == 0
        check_files(mnt)


async def test_a_read_only_data_dir_changes_nothing_and_service_resumes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serve_llm(consolidate) as llm, start_daemon(data, *llm.env()) as daemon:
        async with daemon.async_client(timeout=30) as client:
            await settled(client)
            etag = await remember(client, "keep", "v1")
            log = (await say_to(client, "s1", "I take my tea green.")).json()["path"]

            with read_only(data):
                before = snapshot(data)
                for what, request in writes(client, etag):
                    answer = await request()
                    assert answer.status_code == 503, (what, answer.text)
                    refused(answer, 503, "read_only")
                await reads_work(client, etag)
                # A dream can neither close the log nor write: it ends, and nothing moved.
                answer = await client.post("/v1/sleep/run", json={"wait": True})
                assert answer.status_code == 200 and answer.json()["result"]["processed"] == []
                stopped = answer.json()["result"]
                assert stopped["status"] == "interrupted", stopped
                assert stopped["reason"].startswith("storage: read_only"), stopped
                health = await client.get("/v1/health")
                assert health.status_code == 200 and health.json()["status"] == "degraded"
                assert health.json()["storage"]["status"] == "degraded"
                assert "read_only" in health.json()["storage"]["detail"]
                assert snapshot(data) == before
                assert list(data.rglob(f"{TEMP_PREFIX}*")) == []

            assert (await storage_of(client))[1:] == ("ok", None)
            await writes_work(client, etag)
            result = (await client.post("/v1/sleep/run", json={"wait": True})).json()["result"]
            assert result["status"] == "deep_sleep", result
            assert Path(log).stem in result["processed"]
        assert daemon.stop() == 0
    check_files(data)


# ---------------------------------------------------------------------- a bad LLM


def _reply(content: str) -> bytes:
    return json.dumps({"choices": [{"message": say(content)}]}).encode()


FAULTS: dict[str, Callable[[], Fault]] = {
    "silence": lambda: Fault(hang=True),
    "trickle": lambda: Fault(body=_reply("ok"), trickle_s=0.2),
    "http 500": lambda: Fault(status=500, body=b"upstream exploded"),
    "not json": lambda: Fault(body=b"<html>502 Bad Gateway (sent as 200)</html>"),
    "no choices": lambda: Fault(body=b'{"object": "chat.completion", "choices": []}'),
    "bad tool calls": lambda: Fault(body=b'{"choices": [{"message": {"tool_calls": "all"}}]}'),
    "flood": lambda: Fault(body=_reply("garbage " * 3_000_000)),  # 24 MB, well formed
}
CALLS = {"http 500": 5}  # a 5xx is tried three times; any other fault ends the dream at once
TIMEOUT_S = 1.0


@pytest.mark.parametrize("fault", FAULTS)
async def test_a_bad_llm_mid_dream_stops_it_whole(tmp_path: Path, fault: str) -> None:
    """The model reads the log and stores a fact, then its endpoint goes bad: the dream
    ends ``interrupted`` within a few seconds (the per-request timeout is 1 s; a 500 is
    tried three times; an answer over 8 MiB is refused as it comes), the fact is whole,
    the log waits untouched, the journal tells; with the endpoint healthy again the next
    dream finishes the log."""

    def script(messages: list[dict[str, Any]]) -> Answer:
        done = sum(m["role"] == "tool" for m in messages)
        if done == 0:
            return tool_call("read_session_log", log=dream_logs(messages)[0])
        if done == 1:
            return tool_call(
                "create_knowledge",
                name="before-the-fault",
                entry_type="preference",
                description="Green tea, no sugar",
                body="The user drinks green tea without sugar.",
            )
        return FAULTS[fault]()

    data = tmp_path / "data"
    with serve_llm(script) as llm, start_daemon(data, *llm.env(TIMEOUT_S)) as daemon:
        async with daemon.async_client(timeout=30) as client:
            log = Path((await say_to(client, "s1", "I take my tea green.")).json()["path"])
            assert (await client.post("/v1/sessions/s1/close")).status_code == 200
            logged = (data / log).read_bytes()

            # Stopped whole by the fault, not retried: the LLM's count says so (no figure
            # of seconds a loaded machine might miss; the wait is capped for a hang).
            # A loaded machine can miss the 1 s timeout before the fault (reading the log,
            # storing the fact): that dream stops as the fault would, short of the fault's
            # request, and leaves the log pending; the next one starts over.
            while True:
                before = llm.count
                answer = await client.post("/v1/sleep/run", json={"wait": True}, timeout=300)
                result = answer.json()["result"]
                early = llm.count - before < 3 and "no answer within" in str(result["reason"])
                if not early:
                    break
            assert result["status"] == "interrupted" and result["reason"].startswith("llm: ")
            assert result["processed"] == [] and result["created"] == 1, result
            assert llm.count - before == CALLS.get(fault, 3)

            entry = await client.get("/v1/memories/knowledge/before-the-fault")
            assert entry.status_code == 200 and "green tea" in entry.json()["body"]
            assert (data / log).read_bytes() == logged  # still pending, untouched
            journal = parse_strictly(data / result["journal"])
            assert journal.meta["status"] == "interrupted"
            assert "knowledge before-the-fault" in journal.body
            assert (await client.get("/v1/health")).status_code == 200
            check_files(data)

            llm.script = consolidate
            # The 1 s per-request timeout stays: on a loaded machine the scripted model can
            # miss it too. Such a dream leaves the log pending, and the next one takes it.
            while True:
                answer = await client.post("/v1/sleep/run", json={"wait": True}, timeout=300)
                result = answer.json()["result"]
                if "no answer within" not in str(result.get("reason")):
                    break
            assert (result["status"], result["processed"]) == ("deep_sleep", [log.stem]), result
            named = await client.get(f"/v1/memories/knowledge/{knowledge_name(log.stem)}")
            assert named.status_code == 200
        assert daemon.stop() == 0
    check_files(data)


async def test_a_slow_llm_dream_ends_in_bounded_time(tmp_path: Path) -> None:
    """Every answer takes 0.3 s (under the 2 s timeout): the dream is slow, and whole."""
    data = tmp_path / "data"
    with (
        serve_llm(consolidate, delay_s=0.3) as llm,
        start_daemon(data, *llm.env(timeout_s=2)) as daemon,
    ):
        async with daemon.async_client(timeout=60) as client:
            log = Path((await say_to(client, "s1", "I take my tea green.")).json()["path"])
            began = time.monotonic()
            result = (await client.post("/v1/sleep/run", json={"wait": True})).json()["result"]
            took = time.monotonic() - began
    assert (result["status"], result["processed"]) == ("deep_sleep", [log.stem]), result
    calls = result["iterations"]
    assert calls * 0.3 <= took, (calls, took)  # every slow answer waited for, none dropped
    check_files(data)


async def test_shutdown_while_the_llm_hangs_is_bounded_and_clean(tmp_path: Path) -> None:
    """SIGTERM in the middle of a call that would wait a minute: the daemon cancels the
    dream, writes its journal (interrupted) and exits 0 within seconds; nothing else."""

    def script(messages: list[dict[str, Any]]) -> Answer:
        if not any(m["role"] == "tool" for m in messages):
            return tool_call("read_session_log", log=dream_logs(messages)[0])
        return Fault(hang=True)

    data = tmp_path / "data"
    # The hanging call would wait 600 s: a shutdown that waited for it would outlast the
    # 120 s cap below (a cap for a hang, not a figure a loaded machine must meet).
    with serve_llm(script) as llm, start_daemon(data, *llm.env(timeout_s=600)) as daemon:
        async with daemon.async_client(timeout=30) as client:
            log = Path((await say_to(client, "s1", "I take my tea green.")).json()["path"])
            assert (await client.post("/v1/sessions/s1/close")).status_code == 200
            logged = (data / log).read_bytes()
            assert (await client.post("/v1/sleep/run", json={})).json()["started"]
            # The second call is the one that hangs.
            await asyncio.to_thread(wait_for, lambda: llm.count >= 2, 120, "the second call")
            daemon.process.send_signal(signal.SIGTERM)
            status = await asyncio.to_thread(daemon.process.wait, 120)
    assert status == 0, status
    assert (data / log).read_bytes() == logged
    [journal] = (data / "memory/dream-log").glob("*.md")
    assert parse_strictly(journal).meta["status"] == "interrupted"
    check_files(data)
