"""The stress tests' clients and their ledger: what was sent, what somnid acknowledged, how
long it took; and the checks that nothing acknowledged is lost and nothing is torn.

Every client is sequential: it sends one request, waits for the answer, sends the next. So
when the daemon dies, a client has at most one request whose outcome is unknown: on disk
there must be what it had acknowledged, plus, at most, that one request, whole.

- Capture writers append batches of messages (and tool calls) to a session; several may
  share one session. Each text names its writer and its number (``c3w1#17``), so the
  checks find, per writer, exactly its acknowledged batches in order, nothing torn, nothing
  doubled.
- Memory writers own their entries: create, replace, patch, archive. An entry's body ends
  with its version; a unique token in its description makes recall find it.
- Contenders share one entry: read it, append their token to its body, write it back with
  ``If-Match``; a 412 means read again. No acknowledged token may ever go missing (a lost
  update), and the entry's last acknowledged version is the one on disk.
- Recallers look up entries that were acknowledged before they asked (read your writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import random
import string
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from somnid.memory.kinds import Kind
from somnid.sessions.transcript import list_logs, parse_turns
from somnid.store import frontmatter
from somnid.store.atomic import TEMP_PREFIX
from somnid.store.layout import Layout
from tests.stress.llm import knowledge_name

UTC = dt.UTC
JOURNAL_STATUSES = {"deep_sleep", "interrupted", "maintenance", "skipped"}
LIVE, ARCHIVED = "live", "archived"
CONTENDED = "contended"
BLIND = "blind"
DAY_MS = 24 * 60 * 60 * 1000
QUIET = (  # no dream but the ones a test starts; small logs, so they roll over
    ("SOMNID_DREAM__IDLE_MS", str(DAY_MS)),
    ("SOMNID_DREAM__MAX_INTERVAL_MS", str(7 * DAY_MS)),
    ("SOMNID_DREAM__MAX_LOGS", "16"),
    ("SOMNID_DREAM__MAX_ITERATIONS", "200"),
    ("SOMNID_CAPTURE__LOG_MAX_BYTES", "16384"),
)
FILLER = " ".join(["the quick brown fox jumps over the lazy dog"] * 2)


def stress_seed() -> int:
    """``SOMNID_STRESS_SEED``, or a fresh one: the tests print it, to replay a run."""
    return int(os.environ.get("SOMNID_STRESS_SEED") or random.SystemRandom().randrange(10**9))


def token(rng: random.Random) -> str:
    """A word no other entry holds, for recall to find."""
    return "".join(rng.choice(string.ascii_lowercase) for _ in range(12))


@dataclass
class Expect:
    """What an entry should be: live with this body, or archived."""

    state: str
    body: str = ""


@dataclass
class EntryLog:
    description: str
    token: str
    acked: Expect | None = None  # None: its creation is not acknowledged
    unknown: Expect | None = None  # the write in flight when the daemon died
    generation: int = 0  # bumped when an archive starts: recall may miss it from then on
    archiving: bool = False


@dataclass
class WriterLog:
    session: str
    acked: list[tuple[str, ...]] = field(default_factory=list)
    unknown: tuple[str, ...] | None = None


@dataclass
class Ledger:
    """Thread-safe: the crash test's clients run on one loop, the checks anywhere."""

    writers: dict[str, WriterLog] = field(default_factory=dict)
    sent: set[str] = field(default_factory=set)
    entries: dict[str, EntryLog] = field(default_factory=dict)
    contended_acked: list[tuple[str, str, str]] = field(default_factory=list)  # token, etag, body
    contended_unknown: set[str] = field(default_factory=set)
    blind_acked: list[tuple[str, str]] = field(default_factory=list)  # body, etag
    blind_unknown: set[str] = field(default_factory=set)
    conflicts: int = 0
    recalls: int = 0  # lookups of earlier writes checked
    errors: list[str] = field(default_factory=list)
    latency: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def error(self, what: str, answer: httpx.Response) -> None:
        with self.lock:
            self.errors.append(f"{what}: HTTP {answer.status_code} {answer.text[:300]}")

    @contextlib.contextmanager
    def timed(self, op: str) -> Iterator[None]:
        began = time.monotonic()
        try:
            yield
        finally:
            with self.lock:
                self.latency[op].append(time.monotonic() - began)

    def report(self) -> str:
        lines = [f"{'operation':<14}{'count':>7}{'p50 ms':>9}{'p95 ms':>9}{'max ms':>9}"]
        for op, values in sorted(self.latency.items()):
            p50, p95, top = percentiles(values)
            lines.append(
                f"{op:<14}{len(values):>7}{p50 * 1000:>9.1f}{p95 * 1000:>9.1f}{top * 1000:>9.1f}"
            )
        return "\n".join(lines)


def percentiles(values: list[float]) -> tuple[float, float, float]:
    ordered = sorted(values)
    if not ordered:
        return 0.0, 0.0, 0.0

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return at(0.5), at(0.95), ordered[-1]


# ---------------------------------------------------------------------- clients


async def capture_writer(
    client: httpx.AsyncClient,
    ledger: Ledger,
    writer: str,
    session: str,
    rng: random.Random,
    stop: asyncio.Event,
    *,
    closes: float = 0.0,
) -> None:
    """Append batches of 1-3 messages (one in eight a tool call) until ``stop`` or the
    daemon goes away. Before a batch, with chance ``closes``, close the session's log, or
    (one time in four) mark the session never to be dreamed: each rewrites front-matter."""
    with ledger.lock:
        log = ledger.writers.setdefault(writer, WriterLog(session))
    number = 0
    while not stop.is_set():
        if closes and rng.random() < closes:
            op = "no-dream" if rng.random() < 0.25 else "close"
            try:
                with ledger.timed(op):
                    answer = await client.post(f"/v1/sessions/{session}/{op}")
            except httpx.TransportError:
                return
            if answer.status_code != 200:
                ledger.error(f"{op} {session}", answer)
                return
        texts = tuple(f"{writer}#{number + i} {FILLER}" for i in range(rng.randint(1, 3)))
        number += len(texts)
        tool = rng.random() < 0.125
        request: dict[str, Any]
        if tool:
            texts = texts[:1]
            request = {"call": f'note(text="{texts[0]}")', "result": "ok", "reason": "stress"}
            route, op = f"/v1/sessions/{session}/tool-calls", "tool_call"
        else:
            roles = ("user", "agent")
            request = {"messages": [{"role": rng.choice(roles), "text": t} for t in texts]}
            route, op = f"/v1/sessions/{session}/messages", "append"
        with ledger.lock:
            ledger.sent.update(texts)
            log.unknown = texts
        try:
            with ledger.timed(op):
                answer = await client.post(route, json=request)
        except httpx.TransportError:
            return  # the daemon died: the batch may or may not be there, but whole
        if answer.status_code != 200:
            ledger.error(f"{op} {session}", answer)
            return
        with ledger.lock:
            log.acked.append(texts)
            log.unknown = None


async def memory_writer(
    client: httpx.AsyncClient,
    ledger: Ledger,
    writer: str,
    rng: random.Random,
    stop: asyncio.Event,
) -> None:
    """Create knowledge, then replace, patch (with or without If-Match) or archive it."""
    current: str | None = None
    etag: str | None = None
    version = 0
    created = 0
    while not stop.is_set():
        if current is None:
            name = f"{writer}-e{created}"
            created += 1
            word = token(rng)
            entry = EntryLog(f"{name} {word}", word)
            with ledger.lock:
                ledger.entries[name] = entry
            version = 0
            body = f"{FILLER}\n{name} v{version}"
            expect = Expect(LIVE, body)
            request: dict[str, Any] = {
                "name": name,
                "description": entry.description,
                "body": body,
            }
            call, op = client.post("/v1/memories/knowledge", json=request), "create"
            current = name
        else:
            entry = ledger.entries[current]
            pick = rng.random()
            headers = {"If-Match": f'"{etag}"'} if etag and rng.random() < 0.5 else {}
            route = f"/v1/memories/knowledge/{current}"
            if pick < 0.08:
                expect = Expect(ARCHIVED)
                call, op = client.post(route + "/archive", headers=headers), "archive"
            else:
                version += 1
                body = f"{FILLER}\n{current} v{version}"
                expect = Expect(LIVE, body)
                if pick < 0.55:
                    request = {"description": entry.description, "body": body}
                    call, op = client.put(route, json=request, headers=headers), "replace"
                else:
                    request = {"body": body, "fields": {"version": version}}
                    call, op = client.patch(route, json=request, headers=headers), "patch"
        with ledger.lock:
            entry.unknown = expect
            if expect.state == ARCHIVED:
                entry.generation += 1
                entry.archiving = True
        try:
            with ledger.timed(op):
                answer = await call
        except httpx.TransportError:
            return
        finally:
            with ledger.lock:
                entry.archiving = False
        if answer.status_code not in (200, 201):
            ledger.error(f"{op} {current}", answer)
            return
        etag = answer.headers["ETag"].strip('"')
        with ledger.lock:
            entry.acked, entry.unknown = expect, None
        if expect.state == ARCHIVED:
            current = None


async def contender(
    client: httpx.AsyncClient,
    ledger: Ledger,
    writer: str,
    stop: asyncio.Event,
    *,
    pause: float = 0.0,
) -> None:
    """Read the shared entry, add a line, write it back with If-Match; on 412 read again."""
    route = f"/v1/memories/knowledge/{CONTENDED}"
    number = 0
    while not stop.is_set():
        try:
            with ledger.timed("get"):
                current = await client.get(route)
        except httpx.TransportError:
            return
        if current.status_code != 200:
            ledger.error(f"get {CONTENDED}", current)
            return
        mark = f"{writer}-{number}"
        body = current.json()["body"].rstrip("\n") + f"\n{mark}"
        headers = {"If-Match": current.headers["ETag"]}
        request = {"description": current.json()["description"], "body": body}
        with ledger.lock:
            ledger.contended_unknown.add(mark)
        try:
            with ledger.timed("if_match_put"):
                answer = await client.put(route, json=request, headers=headers)
        except httpx.TransportError:
            return
        if answer.status_code == 412:
            assert answer.headers["content-type"].startswith("application/problem+json")
            with ledger.lock:
                ledger.conflicts += 1
                ledger.contended_unknown.discard(mark)  # refused: never written
            continue
        if answer.status_code != 200:
            ledger.error(f"put {CONTENDED}", answer)
            return
        with ledger.lock:
            ledger.contended_unknown.discard(mark)
            ledger.contended_acked.append((mark, answer.headers["ETag"].strip('"'), body))
        number += 1
        if pause:
            await asyncio.sleep(pause)


async def blind_writer(
    client: httpx.AsyncClient, ledger: Ledger, writer: str, stop: asyncio.Event
) -> None:
    """Replace the shared entry without If-Match: the last write wins, whole."""
    route = f"/v1/memories/knowledge/{BLIND}"
    number = 0
    while not stop.is_set():
        body = f"{FILLER}\n{writer}-{number}"
        number += 1
        with ledger.lock:
            ledger.blind_unknown.add(body)
        try:
            with ledger.timed("replace"):
                answer = await client.put(route, json={"description": BLIND, "body": body})
        except httpx.TransportError:
            return
        if answer.status_code != 200:
            ledger.error(f"put {BLIND}", answer)
            return
        with ledger.lock:
            ledger.blind_unknown.discard(body)
            ledger.blind_acked.append((body, answer.headers["ETag"].strip('"')))


async def recaller(
    client: httpx.AsyncClient, ledger: Ledger, rng: random.Random, stop: asyncio.Event
) -> int:
    """Recall entries acknowledged before asking, by the token in their description (which
    updates keep): each must be found unless an archive of it started meanwhile. Updates
    may run meanwhile: recall must not miss an entry while its new version is indexed.
    Returns how many lookups were checked."""
    checked = 0
    while not stop.is_set():
        with ledger.lock:
            still = [
                (name, e.token, e.generation)
                for name, e in ledger.entries.items()
                if e.acked is not None and e.acked.state == LIVE and not e.archiving
            ]
        if not still:
            await asyncio.sleep(0.01)
            continue
        name, word, generation = rng.choice(still)
        try:
            with ledger.timed("recall"):
                answer = await client.post("/v1/recall", json={"query": word, "limit": 5})
        except httpx.TransportError:
            return checked
        if answer.status_code != 200:
            ledger.error("recall", answer)
            return checked
        found = {item["name"] for item in answer.json()["items"]}
        with ledger.lock:
            entry = ledger.entries[name]
            untouched = entry.generation == generation and not entry.archiving
        if untouched:
            checked += 1
            with ledger.lock:
                ledger.recalls += 1
                if name not in found:
                    ledger.errors.append(f"recall {word!r} missed {name}, written before")
    return checked


async def create_contended(client: httpx.AsyncClient, ledger: Ledger) -> None:
    """The entries several clients write: ``contended`` with If-Match, ``blind`` without."""
    body = {"name": CONTENDED, "description": "many writers, one entry", "body": "start"}
    answer = await client.post("/v1/memories/knowledge", json=body)
    assert answer.status_code == 201, answer.text
    with ledger.lock:
        ledger.contended_acked.append(("start", answer.headers["ETag"].strip('"'), "start"))
    body = {"name": BLIND, "description": BLIND, "body": "start"}
    answer = await client.post("/v1/memories/knowledge", json=body)
    assert answer.status_code == 201, answer.text
    with ledger.lock:
        ledger.blind_acked.append(("start", answer.headers["ETag"].strip('"')))


# ---------------------------------------------------------------------- checks


def leftover_temp_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob(f"{TEMP_PREFIX}*"))


def markdown_files(root: Path) -> list[Path]:
    layout = Layout(root)
    return sorted(
        path
        for folder in (layout.memory_dir, layout.skills_dir)
        if folder.is_dir()
        for path in folder.rglob("*.md")
    )


def parse_strictly(path: Path) -> frontmatter.Document:
    """A somnid file as somnid writes it: UTF-8, a front-matter that parses, a body that
    ends with a newline (a torn write does not)."""
    text = path.read_bytes().decode("utf-8")
    assert text.startswith(frontmatter.FENCE + "\n"), f"{path}: no front-matter"
    doc = frontmatter.parse(text)
    assert not doc.body or doc.body.endswith("\n"), f"{path}: ends mid-line"
    return doc


def check_files(root: Path) -> dict[Path, frontmatter.Document]:
    """No temp file left; every Markdown file whole and parseable; journals sane."""
    assert leftover_temp_files(root) == []
    docs = {path: parse_strictly(path) for path in markdown_files(root)}
    layout = Layout(root)
    for path, doc in docs.items():
        if path.parent == layout.dream_log_dir:
            assert doc.meta["status"] in JOURNAL_STATUSES, (path, doc.meta)
            assert doc.meta.get("end_time") is not None
        elif layout.session_log_dir in path.parents:
            assert doc.meta.get("chat_id") and doc.meta.get("status") in ("pending", "processed")
    return docs


def session_texts(root: Path) -> dict[str, list[str]]:
    """Every entry's text per session (chat_id), in log order, from the files."""
    texts: dict[str, list[str]] = defaultdict(list)
    for log in list_logs(Layout(root)):
        doc = parse_strictly(log.path)
        for turn in parse_turns(doc.body, UTC, log=log.path.stem):
            if turn.tool is not None:
                call = turn.tool.call
                assert call.startswith('note(text="') and call.endswith('")'), turn
                texts[str(doc.meta["chat_id"])].append(call[len('note(text="') : -2])
            else:
                texts[str(doc.meta["chat_id"])].append(turn.text)
    return texts


def check_capture(root: Path, ledger: Ledger) -> int:
    """Per writer, on disk: its acknowledged batches in order, then at most the batch in
    flight, whole. Nothing else, nothing torn. Returns the number of texts checked."""
    on_disk = session_texts(root)
    seen = 0
    for session, texts in on_disk.items():
        unknown = [text for text in texts if text not in ledger.sent]
        assert not unknown, f"session {session}: texts never sent (torn?): {unknown[:3]}"
        assert len(texts) == len(set(texts)), f"session {session}: a text written twice"
    for writer, log in ledger.writers.items():
        mine = [t for t in on_disk.get(log.session, []) if t.startswith(f"{writer}#")]
        acked = [text for batch in log.acked for text in batch]
        allowed = [acked]
        if log.unknown is not None:
            allowed.append(acked + list(log.unknown))
        missing = [text for text in acked if text not in mine]
        assert mine in allowed, (
            f"writer {writer} on session {log.session}: {len(acked)} texts acknowledged, "
            f"{len(mine)} on disk, {len(missing)} of them missing (first: {missing[:2]}), "
            f"in flight: {log.unknown}"
        )
        seen += len(acked)
    return seen


def entry_state(root: Path, name: str) -> Expect | None:
    layout = Layout(root)
    live = layout.entry_file(Kind.KNOWLEDGE, name)
    if live.exists():
        return Expect(LIVE, parse_strictly(live).body.rstrip("\n"))
    if layout.entry_file(Kind.KNOWLEDGE, name, archived=True).exists():
        return Expect(ARCHIVED)
    return None


def check_memories(root: Path, ledger: Ledger) -> int:
    """Each entry as last acknowledged, or as the write in flight left it."""
    for name, entry in ledger.entries.items():
        found = entry_state(root, name)
        allowed = [entry.acked, entry.unknown]
        assert found in allowed, f"{name}: on disk {found}, acknowledged {entry.acked}"
    return len(ledger.entries)


def check_contended(root: Path, ledger: Ledger) -> str:
    """No acknowledged If-Match write lost; the file is the last one acknowledged (or the
    one in flight, which then holds every acknowledged line too)."""
    found = entry_state(root, CONTENDED)
    assert found is not None and found.state == LIVE
    lines = set(found.body.split("\n"))
    lost = [mark for mark, _, _ in ledger.contended_acked if mark not in lines]
    assert not lost, f"acknowledged updates lost: {lost}"
    extra = lines - {mark for mark, _, _ in ledger.contended_acked}
    assert len(extra) <= len(ledger.contended_unknown) and extra <= ledger.contended_unknown
    if not extra:  # each write builds on the one before: the last has the longest body
        assert found.body == max((body for _, _, body in ledger.contended_acked), key=len)
    return found.body


async def settled(client: httpx.AsyncClient) -> dict[str, Any]:
    """The index status once the start-up sweep and the first full sync are done."""
    deadline = time.monotonic() + 120  # a cap for a hang: a loaded machine is slow
    while True:
        status: dict[str, Any] = (await client.get("/v1/index/status")).json()
        if status["syncState"] == "ready" and status["lastReport"] is not None:
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"the index did not settle in 120 s: {status}")
        await asyncio.sleep(0.05)


async def check_index(
    client: httpx.AsyncClient, root: Path, ledger: Ledger, names: list[str] | None = None
) -> None:
    """The index agrees with the files: counts, and recall finds every live entry by its
    token and no archived one (of ``names``, or of all the entries written)."""
    await settled(client)
    status = (await client.get("/v1/index/status")).json()
    live = list(Layout(root).kind_dir(Kind.KNOWLEDGE).glob("*/SKILL.md"))
    assert status["counts"].get("knowledge", 0) == len(live), (status, len(live))
    health = (await client.get("/v1/health")).json()
    assert health["brokenFiles"] == [], health
    for name in ledger.entries if names is None else names:
        entry = ledger.entries[name]
        found = entry_state(root, name)
        if found is None:
            continue
        answer = await client.post("/v1/recall", json={"query": entry.token, "limit": 5})
        assert answer.status_code == 200, answer.text
        hits = {item["name"] for item in answer.json()["items"]}
        assert (name in hits) == (found.state == LIVE), (name, found, hits)


def check_blind(root: Path, ledger: Ledger) -> None:
    """The entry written without If-Match holds one acknowledged write, whole (or the one
    in flight when the daemon died)."""
    found = entry_state(root, BLIND)
    assert found is not None and found.state == LIVE
    bodies = {body for body, _ in ledger.blind_acked} | ledger.blind_unknown
    assert found.body in bodies, found.body


def check_dreamed(root: Path) -> int:
    """Every log a dream marked processed has the knowledge the dream made of it before."""
    layout = Layout(root)
    processed = 0
    for log in list_logs(layout, live=False):
        meta = parse_strictly(log.path).meta
        if meta.get("status") == "processed" and not meta.get("dream_skipped"):
            processed += 1
            entry = layout.entry_file(Kind.KNOWLEDGE, knowledge_name(log.path.stem))
            assert entry.exists(), f"{log.path.name} processed, its knowledge missing"
    return processed


def check_all(root: Path, ledger: Ledger) -> str:
    """Every check of the files; a line saying what was checked."""
    assert not ledger.errors, ledger.errors[:5]
    docs = check_files(root)
    texts = check_capture(root, ledger)
    entries = check_memories(root, ledger)
    if ledger.contended_acked:
        check_contended(root, ledger)
    if ledger.blind_acked:
        check_blind(root, ledger)
    processed = check_dreamed(root)
    return (
        f"{len(docs)} files parse, {texts} acknowledged texts and {entries} entries present, "
        f"{processed} logs dreamed"
    )
