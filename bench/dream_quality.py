"""Dream quality with a real model: what dreams write from real conversations, no LLM judge.

For each mode (``pipeline``, ``agentic``) and each of the first ``--conversations`` LoCoMo
dev conversations, a real ``somnid serve`` starts on a fresh data dir with
``dream.llm = openai`` pointed at ``--llm-url``; the first ``--sessions`` sessions are
replayed through the capture API (``POST /v1/sessions/{id}/messages``, each message with its
session's real date as ``timestamp``, one log per session), then dreams run
(``POST /v1/sleep/run``) until no log is pending or a dream makes no progress. Then, measured
by this script itself:

- logs processed / pending; memories written per kind;
- grounded share: written memories whose own words (the model's text, not the quoted
  evidence) are mostly (>= 70 % of content words, less stop words and reporting verbs
  such as "said" or "discussed") in their source session;
- duplicate share: pairs of written memories with cosine >= 0.95 (the local model);
- answer in top 5: for every question whose evidence lies in the replayed sessions and that
  has an answer, whether recall over the dream-written memories alone returns in its top 5
  a memory containing the answer (the answer's words at token F1 >= 0.5 in some span, or the
  answer string; dates compared as ISO days), beside the same figure for the raw turns,
  stored one per episode in a store of their own under opaque names, as
  ``bench/locomo_retrieval.py`` stores them (the reference); also the figure for the
  memories' own words without their quoted evidence; and after dreams, what one recall
  finds as the agent makes it: the 5 memories plus the up to 5 archived conversation lines
  the answer lists after them (``answer_share_after_dreams``, against the raw turns' 5);
  each question's outcomes are kept per conversation (``answers``);
- tokens and seconds per log.

Run from the repo root, with a model served on loopback (``../shared/llm/serve``)::

    .venv/bin/python bench/dream_quality.py --llm-url http://127.0.0.1:8089/v1

Results go to ``bench/results/dream_quality.json`` (``--out``); progress to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import _truth
from bench._locomo import _MONTHS, Conversation, Turn, load_conversations, stored_name
from bench._signals import exit_cleanly_on_sigterm
from somnid.config import Settings
from somnid.embed.onnx import OnnxEmbedder
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "../shared/data/locomo/locomo-dev.json"
DEFAULT_OUT = REPO / "bench" / "results" / "dream_quality.json"
LABELS = REPO / "bench" / "data" / "dream_labels.json"
MODEL_CACHE = REPO / "bench" / ".cache" / "models"
KINDS = ("episode", "knowledge", "skill", "intention", "profile")
GROUNDED = 0.7
DUPLICATE_COSINE = 0.95
ANSWER_F1 = 0.5
TOP = 5

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_STOP = frozenset(
    """
    the and for are was were has have had his her she they them their you your its this
    that with from into about what when where which who how all any some not but also
    been being will would could just very really much said says shared mentioned talked
    told asked felt feels went going
    discuss discussed discusses discussing express expressed expresses expressing
    """.split()  # noqa: SIM905
)
_DMY = re.compile(r"\b(\d{1,2}) (" + "|".join(_MONTHS) + r"),? (\d{4})\b", re.I)
_MDY = re.compile(r"\b(" + "|".join(_MONTHS) + r") (\d{1,2}),? (\d{4})\b", re.I)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- text measures


def iso_dates(text: str) -> str:
    """ "7 May 2023" and "May 7, 2023" as 2023-05-07, so answers and memories compare."""

    def dmy(m: re.Match[str]) -> str:
        return f"{m[3]}-{_MONTHS[m[2].lower()]:02d}-{int(m[1]):02d}"

    def mdy(m: re.Match[str]) -> str:
        return f"{m[3]}-{_MONTHS[m[1].lower()]:02d}-{int(m[2]):02d}"

    return _MDY.sub(mdy, _DMY.sub(dmy, text))


def tokens(text: str) -> list[str]:
    return [w for w in _WORD.findall(iso_dates(text).casefold()) if w not in ("a", "an", "the")]


def content(text: str) -> set[str]:
    words = set()
    for word in _WORD.findall(text.casefold()):
        if word.isdigit() and len(word) == 4:
            continue  # years: the dream writes resolved dates the session spells otherwise
        if (len(word) >= 3 or word.isdigit()) and word not in _STOP:
            words.add(word[:5])
    return words


def answer_in(answer: str, text: str) -> bool:
    """The answer string, or its words at token F1 >= 0.5 in some span of ``text``."""
    if iso_dates(answer).casefold().strip() in iso_dates(text).casefold():
        return True
    want = tokens(answer)
    have = tokens(text)
    if not want or not have:
        return False
    size = len(want)
    best = 0.0
    want_counts = Counter(want)
    for start in range(max(1, len(have) - size + 1)):
        span = Counter(have[start : start + size])
        common = sum((span & want_counts).values())
        if common:
            precision = common / sum(span.values())
            recall = common / size
            best = max(best, 2 * precision * recall / (precision + recall))
    return best >= ANSWER_F1


def own_words(body: str) -> str:
    """An entry's body without the quoted evidence and source lines the pipeline adds."""
    return "\n".join(
        line for line in body.split("\n") if not line.startswith(("> ", "Source: "))
    ).strip()


# ---------------------------------------------------------------------- the daemon


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    url: str
    data_dir: Path

    def client(self, timeout: float = 60.0) -> httpx.Client:
        token = (self.data_dir / "token").read_text().strip()
        return httpx.Client(
            base_url=self.url, timeout=timeout, headers={"Authorization": f"Bearer {token}"}
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=60)


def start_daemon(data_dir: Path, mode: str, args: argparse.Namespace, model_dir: Path) -> Daemon:
    port = free_port()
    env = {
        **os.environ,
        "SOMNID_DATA_DIR": str(data_dir),
        "SOMNID_PORT": str(port),
        "SOMNID_HOST": "127.0.0.1",
        "SOMNID_TIMEZONE": "UTC",
        "SOMNID_EMBED__MODEL_DIR": str(model_dir),
        "SOMNID_DREAM__ENABLED": "false",
        "SOMNID_DREAM__LLM": "openai",
        "SOMNID_DREAM__MODE": mode,
        "SOMNID_DREAM__OPENAI__BASE_URL": args.llm_url,
        "SOMNID_DREAM__OPENAI__MODEL": args.model,
        "SOMNID_DREAM__REQUEST_TIMEOUT_S": str(args.request_timeout),
        "SOMNID_DREAM__MAX_LOGS": "10",
        "SOMNID_DREAM__TOKEN_BUDGET": str(args.agentic_budget),
        "SOMNID_DREAM__MAX_ITERATIONS": str(args.agentic_iterations),
        "SOMNID_LOG_LEVEL": "warning",
    }
    out = open(data_dir.parent / f"daemon-{mode}.log", "ab")  # noqa: SIM115
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "somnid"), "serve"], env=env, stdout=out, stderr=out
    )
    daemon = Daemon(process, f"http://127.0.0.1:{port}", data_dir)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{daemon.url}/v1/health", timeout=2).status_code == 200:
                return daemon
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    daemon.stop()
    raise RuntimeError("somnid did not come up")


# ---------------------------------------------------------------------- one run


@dataclass
class ModeRun:
    mode: str
    logs_total: int = 0
    logs_pending: int = 0
    dreams: list[dict[str, Any]] = field(default_factory=list)
    entries: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)


def session_turns(conv: Conversation, sessions: int) -> dict[int, list[Turn]]:
    by_session: dict[int, list[Turn]] = {}
    for turn in conv.turns:
        number = int(turn.dia_id[1:].split(":")[0])
        if number <= sessions:
            by_session.setdefault(number, []).append(turn)
    return by_session


def turn_text(turn: Turn) -> str:
    return turn.text + (f" [shares a photo: {turn.caption}]" if turn.caption else "")


def replay(daemon: Daemon, conv: Conversation, sessions: dict[int, list[Turn]]) -> dict[str, int]:
    """Each session as a log of its own; returns log stem -> session number."""
    stems: dict[str, int] = {}
    with daemon.client() as client:
        for number, turns in sorted(sessions.items()):
            session_id = f"{conv.sample_id}-s{number}"
            messages = [
                {
                    "role": "user",
                    "text": turn_text(turn),
                    "speaker": turn.speaker,
                    "timestamp": turn.when.isoformat(),
                }
                for turn in turns
            ]
            answer = client.post(f"/v1/sessions/{session_id}/messages", json={"messages": messages})
            answer.raise_for_status()
            path = answer.json()["path"]
            client.post(f"/v1/sessions/{session_id}/close").raise_for_status()
            stems[Path(path).stem] = number
    return stems


def sleep_status(daemon: Daemon) -> dict[str, Any]:
    """GET /v1/sleep/status on a connection of its own, tried again on a dropped one: a
    daemon starved of CPU for seconds (a dream beside a model on 2 cores) may close a
    kept-alive connection just as the next poll goes out (seen twice at load 10)."""
    for attempt in range(5):
        try:
            with daemon.client(timeout=60) as client:
                now = client.get("/v1/sleep/status")
        except httpx.TransportError as exc:
            log(f"  GET /v1/sleep/status failed ({exc!r}); again")
            time.sleep(2 * (attempt + 1))
            continue
        if now.status_code != 200:
            raise RuntimeError(f"GET /v1/sleep/status: {now.status_code} {now.text[:500]}")
        status: dict[str, Any] = now.json()
        return status
    raise RuntimeError("GET /v1/sleep/status failed 5 times")


def dream_until_done(daemon: Daemon, run: ModeRun, max_dreams: int) -> None:
    with daemon.client(timeout=30) as client:
        for _ in range(max_dreams):
            if sleep_status(daemon)["pendingLogs"] == 0:
                return
            started = time.monotonic()
            client.post("/v1/sleep/run", json={"trigger": "bench"}).raise_for_status()
            time.sleep(1)
            while sleep_status(daemon)["sleeping"]:
                time.sleep(2)
            last = sleep_status(daemon)["lastDream"]
            last["wall_s"] = round(time.monotonic() - started, 1)
            run.dreams.append(last)
            log(
                f"  dream {last['status']} ({last['reason']}): {len(last['processed'])} logs, "
                f"{last['tokens'].get('total', 0)} tokens, {last['wall_s']} s, "
                f"candidates {last.get('candidates')}"
            )
            if not last["processed"]:
                return  # no progress: leave the rest pending


def written(daemon: Daemon) -> list[dict[str, Any]]:
    entries = []
    with daemon.client() as client:
        for kind in KINDS:
            page = client.get("/v1/memories", params={"kind": kind, "limit": 500}).json()
            for item in page["items"]:
                full = client.get(f"/v1/memories/{kind}/{item['name']}").json()
                entries.append(full)
    return entries


def search(daemon: Daemon, query: str) -> tuple[list[dict[str, Any]], list[str]]:
    """One recall as the agent makes it: the memories, and the archived conversation
    lines that come after them (recall.archive, on by default)."""
    with daemon.client() as client:
        answer = client.post("/v1/recall", json={"query": query, "limit": TOP})
        answer.raise_for_status()
        body = answer.json()
        lines = [str(line.get("text", "")) for line in body.get("lines") or []]
        return list(body.get("items") or []), lines


# ---------------------------------------------------------------------- raw-turn reference


async def raw_reference(
    conv: Conversation, sessions: dict[int, list[Turn]], model_dir: Path, questions: list[Any]
) -> list[bool]:
    """The questions over the raw turns, one episode each: does an answer come back?

    Each turn is stored under an opaque name (``stored_name``): names are indexed as
    keywords, and a name made of the dialog id (``d1-9``) lets "on 9 July" match turns.
    """
    with tempfile.TemporaryDirectory(prefix="somnid-dq-raw-", ignore_cleanup_errors=True) as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            timezone="UTC",
            embed={"provider": "local", "model_dir": model_dir},
            dream={"enabled": False},
        )
        last = max(t.when for ts in sessions.values() for t in ts)
        clock = ManualClock(last + dt.timedelta(days=1))
        found: list[bool] = []
        async with Runtime.open(settings, clock=clock) as rt:
            for turns in sessions.values():
                for turn in turns:
                    await rt.memories.create(
                        Kind.EPISODE,
                        stored_name(conv.sample_id, turn.dia_id),
                        description=f"{turn.speaker} on {turn.when:%d %B %Y}",
                        body=f"{turn.speaker}: {turn_text(turn)}",
                        fields={"when": turn.when},
                    )
            await rt.index.wait_idle()
            for question in questions:
                hits = await rt.recall.search(question["question"], limit=TOP)
                texts = []
                for hit in hits:
                    entry = await rt.memories.get(hit.kind, hit.name)
                    texts.append(f"{entry.description} {entry.body}")
                found.append(any(answer_in(question["answer"], text) for text in texts))
        return found


# ---------------------------------------------------------------------- measures


def measure_entries(
    entries: list[dict[str, Any]],
    stems: dict[str, int],
    sessions: dict[int, list[Turn]],
    embedder: OnnxEmbedder,
) -> dict[str, Any]:
    session_words = {
        number: set().union(*(content(f"{t.speaker} {turn_text(t)}") for t in turns))
        for number, turns in sessions.items()
    }
    all_words = set().union(*session_words.values()) if session_words else set()
    grounded = 0
    texts = []
    for entry in entries:
        own = f"{entry.get('description', '')} {own_words(entry.get('body', ''))}"
        texts.append(own)
        # A merged entry rests on every log its Source lines name.
        sources = re.findall(r"^Source: session log (\S+?),", entry.get("body", ""), re.M)
        sources = sources or [str((entry.get("meta") or {}).get("source") or "")]
        numbers = [stems[s] for s in sources if s in stems]
        words = set().union(*(session_words[n] for n in numbers)) if numbers else all_words
        mine = content(own)
        share = len(mine & words) / len(mine) if mine else 1.0
        entry["_grounded_share"] = round(share, 3)
        grounded += share >= GROUNDED
    pairs = duplicates = 0
    if len(texts) > 1:
        vectors = np.asarray(embedder.embed_passages(texts), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
        cos = vectors @ vectors.T
        n = len(texts)
        pairs = n * (n - 1) // 2
        duplicates = int(np.sum(np.triu(cos >= DUPLICATE_COSINE, k=1)))
    per_kind = Counter(str(entry.get("kind")) for entry in entries)
    return {
        "entries": len(entries),
        "per_kind": dict(per_kind),
        "grounded": grounded,
        "pairs": pairs,
        "duplicate_pairs": duplicates,
    }


def observations_of(raw: dict[str, Any], numbers: Iterable[int]) -> list[tuple[str, str, str]]:
    """LoCoMo's observations of the sessions ``numbers``: (speaker, fact, evidence id)."""
    found = []
    for number in numbers:
        by_speaker = (raw.get("observation") or {}).get(f"session_{number}_observation") or {}
        for speaker, facts in by_speaker.items():
            for fact in facts:
                evidence = fact[1] if len(fact) > 1 else ""
                if isinstance(evidence, list):
                    evidence = ";".join(str(e) for e in evidence)
                found.append((speaker, str(fact[0]), str(evidence)))
    return found


def measure_truth(
    conv: Conversation,
    raw: dict[str, Any],
    entries: list[dict[str, Any]],
    stems: dict[str, int],
    sessions: dict[int, list[Turn]],
) -> dict[str, Any]:
    """Attribution, vagueness and observation coverage of what the dreams wrote."""
    speakers = sorted({t.speaker for ts in sessions.values() for t in ts})
    units = _truth.units_of(conv.sample_id, entries, stems)
    observations = observations_of(raw, sessions)
    stated: set[tuple[str, str]] = set()
    judged = []
    for unit in units:
        numbers = unit.sessions or sorted(sessions)
        turns = [(t.speaker, turn_text(t)) for n in numbers for t in sessions.get(n, [])]
        judgement = _truth.judge(unit, turns, speakers, observations_of(raw, numbers))
        for evidence in judgement.observations:
            stated.add((judgement.subjects[0] if judgement.subjects else "", evidence))
        judged.append(
            {
                "text": unit.text,
                "entry": unit.entry,
                "sessions": unit.sessions,
                "subjects": list(judgement.subjects),
                "misattributed": judgement.misattributed,
                "vague": judgement.vague,
                "observations": judgement.observations,
            }
        )
    covered = sum(1 for speaker, _, evidence in observations if (speaker, evidence) in stated)
    seen = Counter(" ".join(unit.text.casefold().split()) for unit in units)
    return {
        "units": len(units),
        "identical_texts": sum(count - 1 for count in seen.values() if count > 1),
        "misattributed_units": sum(j["misattributed"] for j in judged),
        "vague_units": sum(j["vague"] for j in judged),
        "observations": len(observations),
        "observations_covered": covered,
        "updated_by_later_session": sum(1 for e in entries if _later_sessions(e, stems)),
        "judged": judged,
    }


def _later_sessions(entry: dict[str, Any], stems: dict[str, int]) -> bool:
    """Whether ``entry`` was written from one session and updated from a later one."""
    body = str(entry.get("body") or "")
    sources = re.findall(r"^Source: session log (\S+?),", body, re.M)
    return len({stems[s] for s in sources if s in stems}) > 1


def label_agreement(path: Path, data: Path) -> dict[str, Any] | None:
    """How often the automatic checks agree with the hand labels in ``path``."""
    if not path.exists():
        return None
    labels = json.loads(path.read_text())["labels"]
    samples = {s["sample_id"]: s for s in json.loads(data.read_text())}
    convs = {c.sample_id: c for c in load_conversations(data)}
    rows: dict[str, list[tuple[Any, Any]]] = {"attribution": [], "vague": [], "observations": []}
    pairs_found = pairs_wanted = pairs_both = 0
    for label in labels:
        conv, raw = convs[label["conversation"]], samples[label["conversation"]]
        sessions = session_turns(conv, max(label["sessions"]))
        speakers = sorted({t.speaker for ts in sessions.values() for t in ts})
        unit = _truth.Unit(label["conversation"], label["sessions"], label["text"], "",
                           "", label.get("person"))  # fmt: skip
        turns = [(t.speaker, turn_text(t)) for n in label["sessions"] for t in sessions[n]]
        judgement = _truth.judge(unit, turns, speakers, observations_of(raw, label["sessions"]))
        rows["attribution"].append((judgement.misattributed, not label["attribution_right"]))
        rows["vague"].append((judgement.vague, label["vague"]))
        rows["observations"].append((sorted(judgement.observations), sorted(label["observations"])))
        found, wanted = Counter(judgement.observations), Counter(label["observations"])
        pairs_found += sum(found.values())
        pairs_wanted += sum(wanted.values())
        pairs_both += sum((found & wanted).values())
    result: dict[str, Any] = {"labels": len(labels)}
    for key, pairs in rows.items():
        result[key] = round(sum(a == b for a, b in pairs) / len(pairs), 3) if pairs else None
    # Coverage counts (memory, observation) pairs: how many the check finds that the labels
    # have (precision) and, of those the labels have, how many it finds (recall).
    result["observation_precision"] = _ratio(pairs_both, pairs_found)
    result["observation_recall"] = _ratio(pairs_both, pairs_wanted)
    # The bar's figure: the two checks the shares rest on (attribution and vagueness).
    result["min"] = min(result[k] for k in ("attribution", "vague") if result[k] is not None)
    result["labelled_misattributed"] = sum(not x["attribution_right"] for x in labels)
    result["labelled_vague"] = sum(bool(x["vague"]) for x in labels)
    return result


def questions_for(raw: dict[str, Any], sessions: dict[int, list[Turn]]) -> list[dict[str, Any]]:
    replayed = {t.dia_id for ts in sessions.values() for t in ts}
    chosen = []
    for item in raw.get("qa", []):
        answer = item.get("answer")
        evidence = item.get("evidence") or []
        if answer is None or not evidence:
            continue
        ids = {str(e).strip() for e in evidence}
        if ids and all(i in replayed for i in ids):
            chosen.append({"question": item["question"], "answer": str(answer)})
    return chosen


def run_mode(
    mode: str,
    convs: list[tuple[Conversation, dict[str, Any]]],
    args: argparse.Namespace,
    model_dir: Path,
    embedder: OnnxEmbedder,
    reference: dict[str, list[bool]],
    workdir: Path,
) -> dict[str, Any]:
    per_conv = []
    for conv, raw in convs:
        sessions = session_turns(conv, args.sessions)
        questions = questions_for(raw, sessions)
        data_dir = workdir / f"{mode}-{conv.sample_id}"
        data_dir.mkdir(parents=True)
        log(f"{mode} {conv.sample_id}: {len(sessions)} sessions, {len(questions)} questions")
        daemon = start_daemon(data_dir, mode, args, model_dir)
        run = ModeRun(mode)
        try:
            stems = replay(daemon, conv, sessions)
            run.logs_total = len(stems)
            dream_until_done(daemon, run, args.max_dreams)
            with daemon.client() as client:
                run.logs_pending = client.get("/v1/sleep/status").json()["pendingLogs"]
            entries = written(daemon)
            found, found_own, found_after = [], [], []
            in_lines: list[bool] = []
            for question in questions:
                results, lines = search(daemon, question["question"])
                texts, owns = [], []
                for item in results:
                    kind, name = item.get("kind"), item.get("name")
                    entry = next(
                        (e for e in entries if e.get("kind") == kind and e.get("name") == name),
                        None,
                    )
                    if entry is not None:
                        texts.append(f"{entry.get('description', '')} {entry.get('body', '')}")
                        owns.append(f"{entry.get('description', '')} {own_words(entry['body'])}")
                found.append(any(answer_in(question["answer"], t) for t in texts))
                found_own.append(any(answer_in(question["answer"], t) for t in owns))
                in_lines.append(any(answer_in(question["answer"], t) for t in lines))
                found_after.append(found[-1] or in_lines[-1])
        finally:
            daemon.stop()
        measured = measure_entries(entries, stems, sessions, embedder)
        measured.update(measure_truth(conv, raw, entries, stems, sessions))
        turns = sum(len(ts) for ts in sessions.values())
        tokens = sum(d["tokens"].get("total", 0) for d in run.dreams)
        seconds = sum(d.get("seconds", 0.0) for d in run.dreams)
        per_conv.append(
            {
                "conversation": conv.sample_id,
                "turns": turns,
                "logs_total": run.logs_total,
                "logs_pending": run.logs_pending,
                "questions": len(questions),
                "answer_found": sum(found),
                "answer_found_own_words": sum(found_own),
                "answer_found_after_dreams": sum(found_after),
                "raw_answer_found": sum(reference[conv.sample_id]),
                "answers": [
                    {
                        "question": question["question"],
                        "answer": question["answer"],
                        "raw_turns": raw_found,
                        "memories": memory,
                        "own_words": own,
                        "archived_lines": line,
                    }
                    for question, raw_found, memory, own, line in zip(
                        questions,
                        reference[conv.sample_id],
                        found,
                        found_own,
                        in_lines,
                        strict=True,
                    )
                ],
                "tokens": tokens,
                "seconds": round(seconds, 1),
                "dreams": run.dreams,
                "example_copies": sum(
                    d.get("candidates", {}).get("copied_example", 0) for d in run.dreams
                ),
                **measured,
                "written": [
                    {
                        "kind": e.get("kind"),
                        "name": e.get("name"),
                        "description": e.get("description"),
                        "grounded_share": e.get("_grounded_share"),
                        "body": e.get("body"),
                        "meta": {
                            k: v
                            for k, v in (e.get("meta") or {}).items()
                            if k in ("about", "actors", "source", "evidence", "type", "when")
                        },
                        "stems": stems,
                    }
                    for e in entries
                ],
            }
        )
    return summarise(mode, per_conv)


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b else None


def summarise(mode: str, per_conv: list[dict[str, Any]]) -> dict[str, Any]:
    def total(key: str) -> int:
        return int(sum(c[key] for c in per_conv))

    logs = total("logs_total")
    done = logs - total("logs_pending")
    questions = total("questions")
    found_share = total("answer_found") / questions if questions else 0.0
    raw_share = total("raw_answer_found") / questions if questions else 0.0
    return {
        "mode": mode,
        "logs_total": logs,
        "logs_pending": total("logs_pending"),
        "entries": total("entries"),
        "turns": total("turns"),
        "per_kind": dict(sum((Counter(c["per_kind"]) for c in per_conv), Counter())),
        "grounded_share": _ratio(total("grounded"), total("entries")),
        "units": total("units"),
        "misattributed_share": _ratio(total("misattributed_units"), total("units")),
        "vague_share": _ratio(total("vague_units"), total("units")),
        "identical_texts": total("identical_texts"),
        "observation_coverage": _ratio(total("observations_covered"), total("observations")),
        "entries_updated_by_later_session": total("updated_by_later_session"),
        "duplicate_share": _ratio(total("duplicate_pairs"), total("pairs")) or 0.0,
        "example_copies": total("example_copies"),
        "questions": questions,
        "answer_share": round(found_share, 3),
        "answer_share_own_words": round(total("answer_found_own_words") / questions, 3)
        if questions
        else 0.0,
        "answer_share_after_dreams": round(total("answer_found_after_dreams") / questions, 3)
        if questions
        else 0.0,
        "raw_answer_share": round(raw_share, 3),
        "answer_ratio": _ratio(found_share, raw_share),
        "entries_ratio": _ratio(total("entries"), total("turns")),
        "tokens_per_log": round(total("tokens") / logs) if logs else None,
        "tokens_per_processed_log": round(total("tokens") / done) if done else None,
        "seconds_per_log": round(total("seconds") / logs, 1) if logs else None,
        "dreams": sum(len(c["dreams"]) for c in per_conv),
        "dreams_done_with_pending_untouched": sum(
            1
            for c in per_conv
            for d in c["dreams"]
            if d["status"] == "deep_sleep" and not d["processed"] and d["logs"]
        ),
        "conversations": per_conv,
    }


def main(argv: Sequence[str] | None = None) -> int:
    exit_cleanly_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--llm-url", required=True, help="OpenAI-compatible base URL (loopback)")
    parser.add_argument("--model", default="local", help="model name sent and reported")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--modes", default="pipeline,agentic")
    parser.add_argument("--max-dreams", type=int, default=4)
    parser.add_argument("--request-timeout", type=float, default=900.0)
    parser.add_argument("--agentic-budget", type=int, default=60_000)
    parser.add_argument("--agentic-iterations", type=int, default=40)
    parser.add_argument("--keep", action="store_true", help="keep the data dirs and logs")
    parser.add_argument("--labels", type=Path, default=LABELS, help="hand labels to check against")
    args = parser.parse_args(argv)
    if not re.match(
        r"^https?://(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?/", args.llm_url + "/"
    ):
        parser.error("--llm-url must be a loopback address")

    from somnid.embed.e5convert import install_default_model

    model_dir = install_default_model(MODEL_CACHE)
    embedder = OnnxEmbedder.load(model_dir)
    raw_samples = json.loads(args.data.read_text())
    convs = load_conversations(args.data, first=args.conversations)
    pairs = [(c, next(s for s in raw_samples if s["sample_id"] == c.sample_id)) for c in convs]
    reference: dict[str, list[bool]] = {}
    for conv, raw in pairs:
        sessions = session_turns(conv, args.sessions)
        questions = questions_for(raw, sessions)
        reference[conv.sample_id] = asyncio.run(raw_reference(conv, sessions, model_dir, questions))
        log(f"raw turns {conv.sample_id}: {sum(reference[conv.sample_id])}/{len(questions)}")
    started = time.time()
    results = {}
    tmp = Path(tempfile.mkdtemp(prefix="somnid-dq-"))
    log(f"working in {tmp}")
    try:
        for mode in [m.strip() for m in args.modes.split(",") if m.strip()]:
            results[mode] = run_mode(mode, pairs, args, model_dir, embedder, reference, tmp)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    pipeline = results.get("pipeline", {})
    agentic = results.get("agentic", {})
    agreement = label_agreement(args.labels, args.data)
    summary = {
        "model": args.model,
        "label_agreement": agreement,
        "conversations": args.conversations,
        "sessions_each": args.sessions,
        **{k: v for k, v in pipeline.items() if k not in ("conversations", "mode")},
        "agentic": {k: v for k, v in agentic.items() if k not in ("conversations", "mode")},
        "tokens_per_log_vs_agentic": _ratio(
            pipeline.get("tokens_per_log") or 0, agentic.get("tokens_per_log") or 0
        ),
    }
    document = {
        "benchmark": "dream_quality",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.time() - started, 1),
        "summary": summary,
        "runs": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    keys = ("logs_total", "logs_pending", "entries", "entries_ratio", "grounded_share",
            "units", "misattributed_share", "vague_share", "observation_coverage",
            "entries_updated_by_later_session", "identical_texts", "duplicate_share",
            "example_copies",
            "answer_share", "answer_share_own_words", "answer_share_after_dreams",
            "raw_answer_share", "answer_ratio", "tokens_per_log", "seconds_per_log")  # fmt: skip
    print(f"{'':24}" + "".join(f"{mode:>12}" for mode in results))
    for key in keys:
        row = "".join(f"{results[mode].get(key)!s:>12}" for mode in results)
        print(f"{key:24}{row}")
    print(f"tokens per log, pipeline / agentic: {summary['tokens_per_log_vs_agentic']}")
    print(f"per kind: {pipeline.get('per_kind')}")
    print(f"label agreement: {agreement}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
