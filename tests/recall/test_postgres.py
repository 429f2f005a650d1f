"""The postgres index against a real PostgreSQL with pgvector: recall as on SQLite, two
daemons sharing one index, and an outage that loses no write."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import shutil
import threading
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.embed.base import HashEmbedder
from somnid.embed.onnx import OnnxEmbedder
from somnid.errors import IndexUnavailable
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.backend import Document
from somnid.recall.index import Index
from somnid.recall.pg_db import PgDatabase, redact
from somnid.recall.pg_index import PgIndex
from somnid.recall.text import IndexedText, query_terms
from somnid.runtime import Runtime
from tests.cli.runner import cli_env, somnid
from tests.clients import app_client
from tests.recall.pg_server import PgServer
from tests.recall.test_index_lifecycle import until
from tests.recall.test_quality import CASES, MEMORIES

NOW = dt.datetime(2026, 10, 3, tzinfo=dt.UTC)


def pg_settings(data_dir: Path, dsn: str, **extra: Any) -> Settings:
    return Settings(
        data_dir=data_dir,
        timezone="UTC",
        embed={"provider": "off"},
        index={"backend": "postgres", "dsn": dsn},
        history={"enabled": False},
        **extra,
    )


async def names_found(rt: Runtime, query: str) -> list[str]:
    return [hit.name for hit in await rt.recall.search(query, limit=10)]


@pytest.fixture
async def pg_runtime(
    tmp_path: Path, pg_dsn: str, int8_embedder: OnnxEmbedder
) -> AsyncIterator[Runtime]:
    settings = pg_settings(tmp_path / "data", pg_dsn)
    async with Runtime.open(settings, clock=ManualClock(NOW), embedder=int8_embedder) as rt:
        for name, description, body in MEMORIES:
            await rt.memories.create(Kind.KNOWLEDGE, name, description=description, body=body)
        await rt.index.wait_idle()
        yield rt


async def test_recall_on_postgres_finds_what_sqlite_finds(pg_runtime: Runtime) -> None:
    status = pg_runtime.index.status()
    assert (status.entries, status.vectors) == (len(MEMORIES), len(MEMORIES))
    for query, expected in CASES:
        outcome = await pg_runtime.recall.run(query, limit=3)
        assert outcome.mode == "hybrid"
        assert outcome.hits and outcome.hits[0].name == expected, (query, outcome.hits)
    info = await asyncio.to_thread(pg_runtime.recall.describe_index)
    assert info.backend == "postgres" and info.reachable
    assert info.server_version and info.extension and info.extension.startswith("vector ")


KEYWORD_DOCS = [
    (
        "deploy-window",
        "Deploys happen Tuesday to Thursday",
        "deploy ops",
        "Production deploys freeze on Mondays and Fridays; running deploys need a reviewer.",
    ),
    (
        "alice-coffee",
        "Alice drinks oat-milk flat whites",
        "people",
        "Bring Alice a flat white before the Monday review.",
    ),
    (
        "backup",
        "每天凌晨三点备份数据库",
        "运维",
        "备份脚本在 /opt/backup/pg.sh，保留七天。数据库 deploy 之前先备份。",
    ),
    (
        "cat",
        "The cat is called Xiaoju",
        "pets",
        "Xiaoju is an orange cat, three years old, afraid of the vacuum cleaner.",
    ),
    (
        "rust",
        "Borrow checker pitfalls",
        "rust code",
        "Collect into a Vec before mutating the map you are iterating over; reviews catch it.",
    ),
]


def test_keywords_rank_as_fts5_does(tmp_path: Path, pg_dsn: str) -> None:
    """BM25 from stored term counts: the same hits, in the same order, the same scores."""
    docs = [
        Document(
            f"memory/knowledge/{name}/SKILL.md", Kind.KNOWLEDGE, name, f"h-{name}",
            IndexedText(name, description, tags, body, body), 0.5, None, (),
        )
        for name, description, tags, body in KEYWORD_DOCS
    ]  # fmt: skip
    sqlite = Index(tmp_path / "index.sqlite", (3.0, 2.0, 2.0, 1.0, 0.5))
    postgres = PgIndex(PgDatabase(pg_dsn), "test", (3.0, 2.0, 2.0, 1.0, 0.5))
    try:
        sqlite.upsert_many(docs)
        postgres.upsert_many(docs)
        kinds = (Kind.KNOWLEDGE,)
        for query in ("deploys on friday", "flat white review", "数据库备份", "running reviewer"):
            terms = query_terms(query)
            want = sqlite.rows_by_id(i for i, _ in sqlite.keyword_search(terms, kinds, 10))
            expected = [(want[i].name, s) for i, s in sqlite.keyword_search(terms, kinds, 10)]
            got = postgres.rows_by_id(i for i, _ in postgres.keyword_search(terms, kinds, 10))
            found = [(got[i].name, s) for i, s in postgres.keyword_search(terms, kinds, 10)]
            assert [n for n, _ in found] == [n for n, _ in expected], query
            for (_, mine), (_, theirs) in zip(found, expected, strict=True):
                assert mine == pytest.approx(theirs, rel=1e-4), query
    finally:
        sqlite.close()
        postgres.close()


def test_neighbours_agree_on_both_backends(tmp_path: Path, pg_dsn: str) -> None:
    """The turns just before and after each entry in its session (two sessions written
    interleaved, a turn deleted and one added after a first read, entries without a
    session, another daemon's rows in the shared index): what the context lift and the
    answer pass read."""

    def doc(name: str, session: str | None) -> Document:
        text = IndexedText(name, "", "", f"turn {name}", f"turn {name}")
        return Document(f"memory/episodes/{name}.md", Kind.EPISODE, name, f"h-{name}",
                        text, 0.5, None, (), session=session)  # fmt: skip

    order = [("a1", "A"), ("b1", "B"), ("a2", "A"), ("x", None), ("a3", "A"), ("b2", "B")]
    sqlite = Index(tmp_path / "index.sqlite")
    postgres = PgIndex(PgDatabase(pg_dsn), "test")
    other = PgIndex(PgDatabase(pg_dsn), "another daemon")
    try:
        found: list[dict[str, tuple[str | None, str | None]]] = []
        for index in (sqlite, postgres):
            for name, session in order:
                index.upsert_many([doc(name, session)])
                if index is postgres and name == "a1":
                    other.upsert_many([doc("o1", "A")])  # its own row, in session A
            every = ["a1", "a2", "a3", "a4", "b1", "b2", "x"]
            index.neighbours(index.rows_by_id(index.ids_by_name(every).values()).values())
            index.delete("memory/episodes/a3.md")  # what was read before must not be kept
            index.upsert_many([doc("a4", "A")])
            rows = index.rows_by_id(index.ids_by_name(every).values())
            names = {row.id: row.name for row in rows.values()}
            near = index.neighbours(rows.values())
            found.append({
                names[i]: (names.get(b, "?") if b else None, names.get(a, "?") if a else None)
                for i, (b, a) in near.items()
            })  # fmt: skip
        assert found[0] == {
            "a1": (None, "a2"),
            "a2": ("a1", "a4"),
            "a4": ("a2", None),
            "b1": (None, "b2"),
            "b2": ("b1", None),
        }
        assert found[1] == found[0]
    finally:
        sqlite.close()
        postgres.close()
        other.close()


def test_counts_are_exact_right_after_a_write(pg_dsn: str) -> None:
    """The whole-table figures are refreshed off the recall's path, but never stale after a
    write of this daemon's: the vector count right after vectors are stored, BM25's row count
    (an IDF of a term in every row is floored, in none of them it is not)."""

    def doc(name: str, body: str) -> Document:
        text = IndexedText(name, "", "", body, body)
        return Document(f"memory/knowledge/{name}/SKILL.md", Kind.KNOWLEDGE, name, f"h-{name}",
                        text, 0.5, None, ())  # fmt: skip

    index = PgIndex(PgDatabase(pg_dsn), "test")
    try:
        index.use_model("test-model", 4)
        first = [doc(f"n{i}", f"shared words note {i}") for i in range(3)]
        index.upsert_many(first)
        assert index.vector_count() == 0
        unit = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
        for done, d in enumerate(first, start=1):
            index.store_vectors([(d.text.embed_hash, unit)])
            assert index.vector_count() == done
        rare = index.keyword_search(["zebra"], (Kind.KNOWLEDGE,), 10)
        assert rare == []
        index.upsert_many([doc("z", "a zebra among notes")])
        assert [i for i, _ in index.keyword_search(["zebra"], (Kind.KNOWLEDGE,), 10)] != []
        index.delete("memory/knowledge/n0/SKILL.md")
        assert index.vector_count() == 2
    finally:
        index.close()


def test_a_recall_during_a_backfill_does_not_count_the_vectors(pg_dsn: str) -> None:
    """Every recall asks whether any vector exists; each stored chunk of a backfill, and each
    delete, makes the whole-table count stale (~140 ms at 100k), so the question must not
    wait for that count once vectors were stored. Dropping the vectors makes it ask again."""

    def doc(name: str) -> Document:
        text = IndexedText(name, "", "", f"note {name}", f"note {name}")
        return Document(f"memory/knowledge/{name}/SKILL.md", Kind.KNOWLEDGE, name, f"h-{name}",
                        text, 0.5, None, ())  # fmt: skip

    index = PgIndex(PgDatabase(pg_dsn), "test")
    counted: list[int] = []
    read = index._read_vector_count

    def counting() -> int:
        counted.append(1)
        return read()

    index._vectors = type(index._vectors)(counting, 3600.0, index._figures)  # counts each read
    try:
        index.use_model("test-model", 4)
        docs = [doc("a"), doc("b")]
        index.upsert_many(docs)
        assert not index.has_vectors() and len(counted) == 1  # none yet: counted
        unit = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
        for d in docs:
            index.store_vectors([(d.text.embed_hash, unit)])
            assert index.has_vectors()
        assert len(counted) == 1  # the stored vectors said so: no count
        index.delete("memory/knowledge/a/SKILL.md")
        assert index.has_vectors() and len(counted) == 1  # b still has one: no count
        index.invalidate(vectors=True)
        assert not index.has_vectors() and len(counted) == 2  # dropped: counted again
    finally:
        index.close()


async def test_two_daemons_share_one_index(tmp_path: Path, pg_dsn: str) -> None:
    clock = ManualClock(NOW)
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    no_watch = {"watch": False}
    names = [f"topic-{word}" for word in ("otter", "glacier", "violin", "saffron", "comet")]
    async with Runtime.open(pg_settings(a_dir, pg_dsn, recall=no_watch), clock=clock) as a:
        for name in names:
            word = name.split("-")[1]
            await a.memories.create(
                Kind.KNOWLEDGE, name, description=f"all about the {word}", body=f"{word} notes"
            )
        await a.index.sync()
        # The other machine holds the same files (as a git sync leaves them).
        shutil.copytree(a_dir / "memory", b_dir / "memory")
        async with Runtime.open(pg_settings(b_dir, pg_dsn, recall=no_watch), clock=clock) as b:
            await b.index.wait_idle()
            for rt in (a, b):
                for name in names:
                    assert name in await names_found(rt, name.split("-")[1]), name
            assert a.index.status().entries == b.index.status().entries == len(names)

            await a.memories.archive(Kind.KNOWLEDGE, "topic-otter")
            assert "topic-otter" not in await names_found(a, "otter")
            # B derived that row too, and still holds the file: A left it to B.
            assert "topic-otter" in await names_found(b, "otter")
            shutil.rmtree(b_dir / "memory" / "knowledge" / "topic-otter")  # as a sync would
            await b.index.sync()
            assert "topic-otter" not in await names_found(b, "otter")
            for rt in (a, b):
                for name in names[1:]:
                    assert name in await names_found(rt, name.split("-")[1]), name


async def test_another_daemon_s_rows_do_not_crowd_out_one_s_own(
    tmp_path: Path, pg_dsn: str
) -> None:
    """An index probe: on one database, daemon A's 300 entries that said a word twenty
    times filled the ranked pool, and daemon B found nothing for that word in its own."""
    clock = ManualClock(NOW)
    no_watch = {"watch": False, "candidates": 20}
    a_dir, b_dir = tmp_path / "a", tmp_path / "b"
    async with Runtime.open(pg_settings(a_dir, pg_dsn, recall=no_watch), clock=clock) as a:
        for number in range(60):
            body = " ".join(["quokkas"] * 20)
            await a.memories.create(Kind.KNOWLEDGE, f"a-{number}", description="q", body=body)
        await a.index.sync()
        async with Runtime.open(pg_settings(b_dir, pg_dsn, recall=no_watch), clock=clock) as b:
            filler = " ".join(f"word{n}" for n in range(200))
            await b.memories.create(
                Kind.KNOWLEDGE, "b-own", description="mine", body=f"{filler} quokkas"
            )
            await b.index.sync()
            assert await names_found(b, "quokkas") == ["b-own"]
            assert len(await names_found(a, "quokkas")) == 10


def test_another_daemon_s_vectors_do_not_crowd_out_one_s_own(pg_dsn: str) -> None:
    """The vector side of the test above (an index probe): the HNSW neighbours were taken
    over every daemon's rows and filtered after, so daemon A's 80 rows nearer the query
    than B's one took the whole pool, and B found nothing of its own by meaning."""
    a, b = PgIndex(PgDatabase(pg_dsn), "A"), PgIndex(PgDatabase(pg_dsn), "B")
    try:
        rng = np.random.default_rng(7)
        query = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
        for index, names, near in ((a, [f"a{n}" for n in range(80)], 0.05), (b, ["b0"], 0.6)):
            index.use_model("test-model", 4)
            docs = [_doc(name) for name in names]
            index.upsert_many(docs)
            moved = [query + near * rng.standard_normal(4).astype(np.float32) for _ in docs]
            vectors = [v / np.linalg.norm(v) for v in moved]
            index.store_vectors(
                [(doc.text.embed_hash, v) for doc, v in zip(docs, vectors, strict=True)]
            )
        found = b.gather(query, set(), (Kind.KNOWLEDGE,), 20, None)
        assert [row.name for row in found.rows.values()] == ["b0"]
        assert len(found.cosines) == 1
        theirs = a.gather(query, set(), (Kind.KNOWLEDGE,), 20, None)
        assert len(theirs.cosines) == 20 and all(
            r.name.startswith("a") for r in theirs.rows.values()
        )
    finally:
        a.close()
        b.close()


def _doc(name: str) -> Document:
    text = IndexedText(name, "", "", f"notes on {name}", f"notes on {name}")
    return Document(f"memory/knowledge/{name}/SKILL.md", Kind.KNOWLEDGE, name, f"h-{name}",
                    text, 0.5, None, ())  # fmt: skip


async def test_a_postgres_restart_mid_write_loses_nothing(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer
) -> None:
    settings = pg_settings(tmp_path / "data", pg_dsn)
    async with Runtime.open(settings, clock=ManualClock(NOW)) as rt:
        await rt.index.wait_idle()
        written: list[str] = []

        async def write(count: int) -> None:
            for _ in range(count):
                name = f"note-{len(written):03d}"
                await rt.memories.create(
                    Kind.KNOWLEDGE, name, description=f"marker{len(written):03d} note", body="x"
                )
                written.append(name)

        await write(5)
        writer = asyncio.create_task(write(20))
        await until(lambda: len(written) >= 8)
        try:
            await asyncio.to_thread(pg_server.stop, "immediate")
            await writer  # every write lands in its file while the index is down
            with pytest.raises(IndexUnavailable) as raised:
                await rt.recall.search("marker001")
            assert raised.value.code == "index_unavailable"
            assert rt.recall.index_error is not None
            info = await asyncio.to_thread(rt.recall.describe_index)
            assert not info.reachable and info.error
        finally:
            await asyncio.to_thread(pg_server.start)
        assert len(written) == 25
        await until(lambda: rt.recall.index_error is None, 30)
        for number, name in enumerate(written):
            assert name in await names_found(rt, f"marker{number:03d}"), name
        assert rt.index.status().entries == 25


def test_health_and_recall_say_when_postgres_is_down(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer
) -> None:
    settings = pg_settings(tmp_path / "data", pg_dsn)
    with app_client(create_app(settings, clock=ManualClock(NOW)), settings) as client:
        index = client.get("/v1/health").json()["index"]
        assert index["status"] == "ok" and index["backend"] == "postgres"
        assert index["extension"].startswith("vector ") and "password" not in index["detail"]
        try:
            pg_server.stop("immediate")
            made = client.post("/v1/memories/knowledge", json={"name": "kept", "body": "quokka"})
            assert made.status_code == 201, made.text  # the file is the truth
            down = client.post("/v1/recall", json={"query": "quokka"})
            assert down.status_code == 503
            assert down.headers["content-type"].startswith("application/problem+json")
            assert down.json()["code"] == "index_unavailable"
            health = client.get("/v1/health").json()
            assert health["status"] == "degraded" and health["index"]["status"] == "unavailable"
        finally:
            pg_server.start()
        deadline = time.monotonic() + 30
        # Found as soon as the catching-up sync has taken it; health says ok once it is over.
        while "kept" not in [h["name"] for h in recall_hits(client, "quokka")] or (
            client.get("/v1/health").json()["index"]["status"] != "ok"
        ):
            assert time.monotonic() < deadline, "the index did not catch up"
            time.sleep(0.05)


def recall_hits(client: TestClient, query: str) -> list[dict[str, Any]]:
    answer = client.post("/v1/recall", json={"query": query})
    return list(answer.json()["items"]) if answer.status_code == 200 else []


def test_doctor_names_the_backend_and_what_to_do_when_it_is_down(
    tmp_path: Path, pg_dsn: str
) -> None:
    def doctor(dsn: str) -> dict[str, Any]:
        env = cli_env(tmp_path / "data", 9, SOMNID_INDEX__BACKEND="postgres")
        env["SOMNID_INDEX__DSN"] = dsn
        done = somnid(env, "doctor", "--json")
        findings = json.loads(done.stdout)["findings"]
        return next(f for f in findings if f["check"] == "backend")

    found = doctor(pg_dsn)
    assert found["level"] == "OK" and "vector 0.8.6" in found["message"], found
    down = doctor(f"host={tmp_path / 'nowhere'} user=postgres password=hunter2 dbname=x")
    assert down["level"] == "FAIL" and "cannot be reached" in down["message"], down
    assert "index.dsn" in down["fix"] and "hunter2" not in json.dumps(down)


def test_a_dsn_is_shown_without_its_secrets() -> None:
    # Which fields are secrets is scrub's rule: the password, and the SSL key's password too.
    for dsn in (
        "postgresql://me:pw1secret@db.example:5432/m?sslpassword=kp2secret&sslmode=require",
        "host=db.example port=5432 user=me password=pw1secret sslpassword=kp2secret dbname=m"
        " sslmode=require",
    ):
        shown = redact(dsn)
        assert "pw1secret" not in shown and "kp2secret" not in shown, shown
        for kept in ("host=db.example", "port=5432", "user=me", "dbname=m", "sslmode=require"):
            assert kept in shown, shown


async def test_reindex_offline_rebuilds_the_postgres_index(tmp_path: Path, pg_dsn: str) -> None:
    data = tmp_path / "data"
    async with Runtime.open(pg_settings(data, pg_dsn), clock=ManualClock(NOW)) as rt:
        for name in ("kiwi", "mango"):
            await rt.memories.create(Kind.KNOWLEDGE, name, description=f"{name} facts", body="x")
        await rt.index.sync()
    env = cli_env(data, 9, SOMNID_INDEX__BACKEND="postgres", SOMNID_INDEX__DSN=pg_dsn)
    done = await asyncio.to_thread(somnid, env, "reindex")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 entries" in done.stdout, done.stdout
    async with Runtime.open(pg_settings(data, pg_dsn), clock=ManualClock(NOW)) as rt:
        assert "mango" in await names_found(rt, "mango")
        assert rt.index.status().entries == 2


def answered(client: TestClient, method: str, url: str, **kwargs: Any) -> Any:
    """The answer to a request, sent from a thread: a hang fails the test after a minute
    (a cap for a hang, not a figure) instead of holding the suite."""
    found: list[Any] = []
    thread = threading.Thread(target=lambda: found.append(client.request(method, url, **kwargs)))
    thread.daemon = True
    thread.start()
    thread.join(HANG_S)
    assert found, f"{method} {url} gave no answer within {HANG_S} s"
    return found[0]


HANG_S = 60.0


def test_a_server_that_stops_answering_hangs_no_request(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer
) -> None:
    # SIGSTOP (or a partition that leaves the socket open): recall, writes and the public
    # health waited for as long as the server was stopped (80 to 160 s in a probe).
    settings = pg_settings(tmp_path / "data", pg_dsn)
    settings.index.query_timeout_s = 1.0
    settings.index.connect_timeout_s = 1.0
    with app_client(create_app(settings, clock=ManualClock(NOW)), settings) as client:
        assert client.post("/v1/recall", json={"query": "quokka"}).status_code == 200
        pg_server.pause()
        try:
            down = answered(client, "POST", "/v1/recall", json={"query": "quokka"})
            assert down.status_code == 503 and down.json()["code"] == "index_unavailable"
            # Cut at the query timeout, or (a thread with no connection yet) at connecting.
            assert "is unreachable" in down.json()["detail"], down.json()
            made = answered(client, "POST", "/v1/memories/knowledge", json={"name": "kept"})
            assert made.status_code == 201, made.text  # the file is the truth
            health = answered(client, "GET", "/v1/health").json()
            assert health["index"]["status"] == "unavailable"
            scrape = answered(client, "GET", "/metrics")
            assert scrape.status_code == 200 and "somnid_index_up 0.0" in scrape.text
            assert "somnid_index_entries" not in scrape.text
        finally:
            pg_server.resume()
        deadline = time.monotonic() + 30
        while "kept" not in [h["name"] for h in recall_hits(client, "kept")]:
            assert time.monotonic() < deadline, "the index did not catch up"
            time.sleep(0.05)
        assert "somnid_index_up 1.0" in client.get("/metrics").text


def test_what_the_server_refuses_is_unavailable_not_an_error(
    tmp_path: Path, pg_server: PgServer
) -> None:
    # A role that may not create the extension: 500 on health, recall and index status.
    name = "weak_" + uuid.uuid4().hex[:8]
    pg_server.sql(f"CREATE ROLE {name} LOGIN")
    pg_server.sql(f"CREATE DATABASE {name}")
    pg_server.sql("REVOKE CREATE ON SCHEMA public FROM PUBLIC", dbname=name)
    settings = pg_settings(
        tmp_path / "data", pg_server.dsn(name).replace("user=postgres", f"user={name}")
    )
    with app_client(create_app(settings, clock=ManualClock(NOW)), settings) as client:
        recall = client.post("/v1/recall", json={"query": "quokka"})
        assert recall.status_code == 503 and recall.json()["code"] == "index_unavailable"
        assert "refused a request" in recall.json()["detail"]
        assert client.get("/v1/index/status").status_code == 503
        health = client.get("/v1/health").json()
        assert health["status"] == "degraded" and health["index"]["status"] == "unavailable"
        assert client.post("/v1/memories/knowledge", json={"name": "kept"}).status_code == 201


async def test_tables_dropped_by_hand_are_made_again_with_the_model_s_column(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer
) -> None:
    # Recall answered 500 (UndefinedTable) until a restart; made again without the vector
    # column, every search and write then failed (UndefinedColumn) until a restart.
    settings = pg_settings(tmp_path / "data", pg_dsn)
    embedder = HashEmbedder(dim=16)
    async with Runtime.open(settings, clock=ManualClock(NOW), embedder=embedder) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "quokka", description="a small marsupial")
        await rt.index.wait_idle()
        assert await names_found(rt, "marsupial") == ["quokka"]
        dbname = pg_dsn.rsplit("dbname=", 1)[1]
        await asyncio.to_thread(pg_server.sql, "DROP SCHEMA somnid CASCADE", dbname)
        with contextlib.suppress(IndexUnavailable):  # the one use that finds them gone
            await rt.recall.search("marsupial")
        await until(lambda: _found_again(rt), 60)
        await rt.index.wait_idle()
        assert rt.index.status().vectors == 1  # the model's column is back, and filled
        outcome = await rt.recall.run("marsupial")
        assert outcome.mode == "hybrid" and [h.name for h in outcome.hits] == ["quokka"]


async def _found_again(rt: Runtime) -> bool:
    with contextlib.suppress(IndexUnavailable):
        await rt.index.sync()
        return await names_found(rt, "marsupial") == ["quokka"]
    return False


async def test_a_server_restarted_between_two_recalls_fails_neither(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer
) -> None:
    # Each thread's old connection fails once after a restart, and a read is tried again
    # on a new one; a window that failed every call for 5 s after any lost connection
    # made that retry fail too.
    settings = pg_settings(tmp_path / "data", pg_dsn)
    async with Runtime.open(settings, clock=ManualClock(NOW)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "quokka", description="a small marsupial")
        await rt.index.sync()
        assert await names_found(rt, "marsupial") == ["quokka"]
        await asyncio.to_thread(pg_server.stop, "fast")
        await asyncio.to_thread(pg_server.start)
        assert await names_found(rt, "marsupial") == ["quokka"]


async def test_a_recall_refused_while_the_server_was_down_holds_none_back_once_it_is_up(
    tmp_path: Path, pg_dsn: str, pg_server: PgServer
) -> None:
    # CI: a connection refused while the server shut down (a write's catch-up) made every
    # call fail at once for 5 s, the recall right after the restart too. A refusal comes
    # at once, so trying again costs nothing; only a connection that timed out holds back.
    settings = pg_settings(tmp_path / "data", pg_dsn)
    async with Runtime.open(settings, clock=ManualClock(NOW)) as rt:
        await rt.memories.create(Kind.KNOWLEDGE, "quokka", description="a small marsupial")
        await rt.index.sync()
        await asyncio.to_thread(pg_server.stop, "fast")
        try:
            with pytest.raises(IndexUnavailable):
                await names_found(rt, "marsupial")
        finally:
            await asyncio.to_thread(pg_server.start)
        assert await names_found(rt, "marsupial") == ["quokka"]


async def test_a_nul_typed_into_a_file_is_indexed_without_it(tmp_path: Path, pg_dsn: str) -> None:
    # PostgreSQL's text holds no NUL: the batch failed, every sync again, and nothing
    # after it in that batch was indexed.
    settings = pg_settings(tmp_path / "data", pg_dsn)
    folder = settings.data_dir / "memory/knowledge/typed"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: typed\ndescription: d\n---\n\na wombat\x00 x\n")
    async with Runtime.open(settings, clock=ManualClock(NOW)) as rt:
        await rt.index.wait_idle()
        assert rt.recall.index_error is None
        assert await names_found(rt, "wombat") == ["typed"]


def test_a_deleted_text_s_vector_is_dropped(pg_dsn: str) -> None:
    # A probe: vectors kept by text were never deleted (a purged entry's stayed).
    text = IndexedText("gone", "", "", "a text to forget", "a text to forget")
    gone = Document("memory/knowledge/gone/SKILL.md", Kind.KNOWLEDGE, "gone", "h-gone", text,
                    0.5, None, ())  # fmt: skip
    index = PgIndex(PgDatabase(pg_dsn), "test-drop")
    try:
        index.use_model("test-model", 4)
        index.upsert_many([gone])
        index.store_vectors([(text.embed_hash, np.array([0.0, 1.0, 0.0, 0.0], np.float32))])
        kept = "SELECT count(*) FROM somnid.vectors WHERE embed_hash = %s"
        assert index.db.count(kept, (text.embed_hash,)) == 1
        index.drop_unused_vectors()
        assert index.db.count(kept, (text.embed_hash,)) == 1  # used: kept
        index.delete(gone.path)
        assert index.drop_unused_vectors() >= 1
        assert index.db.count(kept, (text.embed_hash,)) == 0
    finally:
        index.close()
