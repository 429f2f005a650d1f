"""Recall over the conversation archive: does the line that says the answer come back?

``recall_memories`` and ``POST /v1/recall`` list archived conversation lines after the
memories (``services/archive_recall.py``): after a dream, an answer it left out is found
there or not at all. Here every LoCoMo dev conversation, whole, is one archive (each turn a
line, a shared photo's caption in it, as the dream benchmark replays them) and every
question with evidence (adversarial ones left out: they have no answer) asks it: is an
evidence line in the top 5 (R@5)? Measured in the same run, on the same lines:

- ``somnid``: the shipped ``rank_lines`` (the query terms a line holds, weighed by idf, and
  the day the question names, asked the day after the archive's last line); ``somnid
  without the time part``: the terms alone;
- ``fused with the cosine``: its 40 best lines scored as recall fuses its two sides
  (0.6 × the cosine on the hint gate's scale + 0.4 × the keyword weight over the best's),
  with the real local model; ``cosine alone``: the same 40 by cosine only;
- ``terms counted, cosine order``: the ranking before 2026-12-04 (the 40 lines holding the
  most query terms, ordered by cosine, those below the cosine floor dropped).

The same variants on the generated Chinese set (``bench/zh_assistant_data.py``: each user's
messages and 100 other users' messages about things they never mention, one archive a
user; R@5 per question kind), where a term is a CJK bigram matched as a substring.

Time per query is measured apart on 60 questions: the shipped ranking, and the fused one
with no vector kept between queries (the archive has none: each recall would embed its
candidates). And at scale: every conversation's lines repeated to 110,400 (each copy under
its own log, on the original's days: ~1,000 lines a session's day), 60 questions ranked by
the shipped code, by its terms alone (the archive's lines casefolded and joined once, each
term found by one scan) and by the code before it (each line tested for each term,
a1ad67b), which must pick the same lines as the terms alone.

    .venv/bin/python bench/archive_recall.py       # writes bench/results/archive_recall.json
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

if __package__ in (None, ""):  # run as a script: make the repo root importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._locomo import CATEGORIES, Conversation, load_conversations
from bench.dream_quality import MODEL_CACHE
from bench.zh_assistant_data import DISTRACTORS, SEED, USERS, Message, User, build, distractors_for
from somnid.config import RecallSettings
from somnid.embed.e5convert import install_default_model
from somnid.embed.onnx import OnnxEmbedder
from somnid.recall.dates import query_time
from somnid.recall.scorer import Weights
from somnid.recall.text import query_terms
from somnid.recall.vectors import Vector
from somnid.services.archive_recall import ArchiveLine, ArchiveText, rank_lines, term_weights
from somnid.sessions.transcript import Turn

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / "../shared/data/locomo/locomo-dev.json"
DEFAULT_OUT = REPO / "bench" / "results" / "archive_recall.json"
TOP = 5
TIMED = 60
CANDIDATES = 40  # lines the model orders, in the variants that use it
BOUND = RecallSettings().time_bound  # what recall passes: its default
MAX_LINE_CHARS = 600  # of a line, embedded
SCALE_LINES = 110_400  # the scale run: 40 times the dev split's 2,760 lines

Ranker = Callable[[str, ArchiveText, int, dt.date], Awaitable[list[ArchiveLine]]]


class Meanings:
    """The local model; ``keep`` holds every passage vector between queries (for the
    quality runs: the same lines are embedded once)."""

    def __init__(self, embedder: OnnxEmbedder, *, keep: bool) -> None:
        self._embedder = embedder
        self._kept: dict[str, Vector] | None = {} if keep else None

    def passages(self, texts: list[str]) -> list[Vector]:
        kept = self._kept
        wanted = list(dict.fromkeys(texts))
        missing = wanted if kept is None else [text for text in wanted if text not in kept]
        fresh = dict(zip(missing, _unit(self._embedder.embed_passages(missing)), strict=True))
        if kept is None:
            return [fresh[text] for text in texts]
        kept.update(fresh)
        return [kept[text] for text in texts]

    def query(self, text: str) -> Vector:
        return _unit(self._embedder.embed_queries([text]))[0]


def _unit(matrix: Any) -> list[Vector]:
    rows = [np.asarray(row, dtype=np.float32) for row in matrix]
    return [row / (float(np.linalg.norm(row)) or 1.0) for row in rows]


def ranked(query: str, archive: ArchiveText, limit: int, today: dt.date) -> list[ArchiveLine]:
    """The shipped ranking as recall calls it: with the time the search reads from the
    query (the days it lifts, the period it bounds) and recall's default time bound."""
    return rank_lines(query, archive, limit, query_time(query, today), BOUND)


def _line(turn: Turn, score: float) -> ArchiveLine:
    return ArchiveLine(turn.log, turn.role, turn.speaker, turn.timestamp, turn.text, score)


def by_meaning(meanings: Meanings, weights: Weights) -> Ranker:
    """The idf ranking's best :data:`CANDIDATES` lines, scored as recall fuses its sides:
    ``weights.vector`` × clip((cosine − floor) / span) + ``weights.keyword`` × the line's
    weight over the best line's."""

    async def rank(
        query: str, archive: ArchiveText, limit: int, today: dt.date
    ) -> list[ArchiveLine]:
        picked = ranked(query, archive, CANDIDATES, today)
        if not picked:
            return []
        vectors = meanings.passages([line.text[:MAX_LINE_CHARS] for line in picked])
        query_vector = meanings.query(query)
        best = picked[0].score
        scored = []
        for line, vector in zip(picked, vectors, strict=True):
            cosine = float(np.dot(vector, query_vector))
            meaning = min(1.0, max(0.0, (cosine - weights.cos_floor) / weights.cos_span))
            score = weights.vector * meaning + weights.keyword * line.score / best
            scored.append((score, line))
        scored.sort(key=lambda pair: -pair[0])
        return [line for _, line in scored[:limit]]

    return rank


def terms_counted(meanings: Meanings, weights: Weights) -> Ranker:
    """The ranking before 2026-12-04: the lines holding the most query terms (newer first
    among equals), ordered by their cosine alone; lines below the cosine floor dropped."""

    async def rank(
        query: str, archive: ArchiveText, limit: int, today: dt.date
    ) -> list[ArchiveLine]:
        turns = archive.turns
        terms = query_terms(query)
        counted = [
            (sum(1 for term in terms if term in turn.text.casefold()), index)
            for index, turn in enumerate(turns)
        ]
        picked = sorted((pair for pair in counted if pair[0]), key=lambda p: (-p[0], -p[1]))
        chosen = [turns[index] for _, index in picked[:CANDIDATES]]
        if not chosen:
            return []
        vectors = meanings.passages([turn.text[:MAX_LINE_CHARS] for turn in chosen])
        query_vector = meanings.query(query)
        lines = []
        for vector, turn in zip(vectors, chosen, strict=True):
            cosine = float(np.dot(vector, query_vector))
            score = min(1.0, max(0.0, (cosine - weights.cos_floor) / weights.cos_span))
            if score > 0:
                lines.append(_line(turn, score))
        lines.sort(key=lambda line: -line.score)
        return lines[:limit]

    return rank


async def shipped(
    query: str, archive: ArchiveText, limit: int, today: dt.date
) -> list[ArchiveLine]:
    return ranked(query, archive, limit, today)


async def timeless(
    query: str, archive: ArchiveText, limit: int, today: dt.date
) -> list[ArchiveLine]:
    """The shipped ranking without its time part (no day is read from the query)."""
    return rank_lines(query, archive, limit)


def per_line(query: str, turns: list[Turn], limit: int) -> list[ArchiveLine]:
    """The shipped ranking until the archive's text was joined (a1ad67b): each line
    casefolded and tested for each term."""
    terms = query_terms(query)
    if not terms or limit <= 0 or not turns:
        return []
    held = [[term in turn.text.casefold() for term in terms] for turn in turns]
    idf = term_weights([sum(1 for row in held if row[t]) for t in range(len(terms))], len(held))
    whole = sum(idf)
    share = [sum(w for w, has in zip(idf, row, strict=True) if has) / whole for row in held]
    matched = sorted((i for i, s in enumerate(share) if s > 0), key=lambda i: (-share[i], -i))
    return [_line(turns[i], round(share[i], 4)) for i in matched[:limit]]


def at_scale(convs: list[Conversation], size: int = SCALE_LINES) -> dict[str, Any]:
    """Every conversation's lines repeated to ``size``; the shipped ranking and the one
    before it on the same questions, timed, and whether they picked the same lines."""
    lines = [turn for conv in convs for turn in archive_of(conv)[0]]
    # each copy of a line under its own log, so that "the same lines" means the same copies
    turns = [dataclasses.replace(lines[i % len(lines)], log=f"line-{i}") for i in range(size)]
    started = time.perf_counter()
    archive = ArchiveText(turns)
    build = time.perf_counter() - started
    questions = [q.text for conv in convs for q in conv.questions if q.category != 5]
    questions = questions[:: max(1, len(questions) // TIMED)][:TIMED]
    today = Case(turns, []).today
    timings: dict[str, list[float]] = {"somnid": [], "terms only": [], "before (per line)": []}
    same = 0
    for question in questions:
        started = time.perf_counter()
        ranked(question, archive, TOP, today)
        timings["somnid"].append(time.perf_counter() - started)
        started = time.perf_counter()
        now = rank_lines(question, archive, TOP)
        timings["terms only"].append(time.perf_counter() - started)
        started = time.perf_counter()
        before = per_line(question, turns, TOP)
        timings["before (per line)"].append(time.perf_counter() - started)
        same += now == before
    return {
        "lines": len(turns),
        "build_ms": round(1000 * build, 1),
        "joined_mb": round(archive.size / 1e6, 1),
        "per_query_ms": {name: percentiles(seconds) for name, seconds in timings.items()},
        "same_lines": f"{same}/{len(questions)}",
    }


def archive_of(conv: Conversation) -> tuple[list[Turn], dict[str, int]]:
    """The conversation as archived lines, and each dialog id's line."""
    lines: list[Turn] = []
    where: dict[str, int] = {}
    for turn in conv.turns:
        text = turn.text + (f" [shares a photo: {turn.caption}]" if turn.caption else "")
        where[turn.name] = len(lines)
        lines.append(Turn("user", turn.speaker, turn.when, text, log=conv.sample_id))
    return lines, where


@dataclass(frozen=True, slots=True)
class Asked:
    text: str
    category: str
    evidence: tuple[int, ...]  # the lines that say the answer


@dataclass(frozen=True, slots=True)
class Case:
    """One archive and the questions asked of it."""

    turns: list[Turn]
    questions: list[Asked]

    @property
    def today(self) -> dt.date:
        """When the questions are asked: the day after the last line."""
        return max(t.timestamp for t in self.turns if t.timestamp).date() + dt.timedelta(days=1)


def locomo_cases(convs: list[Conversation]) -> list[Case]:
    """Each conversation one archive; every question with evidence (adversarial ones have
    no answer)."""
    cases = []
    for conv in convs:
        turns, where = archive_of(conv)
        asked = [
            Asked(
                question.text,
                CATEGORIES.get(question.category, str(question.category)),
                tuple(where[name] for name in question.evidence if name in where),
            )
            for question in conv.questions
            if question.category != 5 and question.evidence
        ]
        cases.append(Case(turns, asked))
    return cases


def zh_cases(users: list[User], distractors: int = DISTRACTORS) -> list[Case]:
    """Each user of the generated Chinese set one archive: their messages and as many other
    users' messages about things they never mention, in time order, as ``zh_assistant``
    stores them."""
    cases = []
    for user in users:
        said = sorted([*user.messages, *distractors_for(user, users, distractors)], key=_when)
        where = {message.key: index for index, message in enumerate(said)}
        turns = [Turn("user", None, m.when, m.text, log=user.key) for m in said]
        asked = [
            Asked(q.text, q.kind, tuple(where[key] for key in q.evidence if key in where))
            for q in user.questions
        ]
        cases.append(Case(turns, [a for a in asked if a.evidence]))
    return cases


def _when(message: Message) -> dt.datetime:
    return message.when


def _said(line: ArchiveLine, turn: Turn) -> bool:
    """Whether the line is the turn (a line keeps its turn's text, speaker and time)."""
    return (line.text, line.speaker, line.time) == (turn.text, turn.speaker, turn.timestamp)


async def measure(
    cases: list[Case], embedder: OnnxEmbedder
) -> tuple[dict[str, dict[str, Any]], dict[str, list[float]]]:
    weights = Weights()
    kept = Meanings(embedder, keep=True)
    variants: dict[str, Ranker] = {
        "somnid": shipped,
        "somnid without the time part": timeless,
        "fused with the cosine": by_meaning(kept, weights),
        "cosine alone": by_meaning(kept, Weights(vector=1.0, keyword=0.0)),
        "terms counted, cosine order": terms_counted(kept, weights),
    }
    timed: dict[str, Ranker] = {
        "somnid": shipped,
        "fused with the cosine": by_meaning(Meanings(embedder, keep=False), weights),
    }
    hits: dict[str, dict[str, list[bool]]] = {name: {} for name in variants}
    shown: dict[str, list[int]] = {name: [] for name in variants}
    timings: dict[str, list[float]] = {name: [] for name in timed}
    for case in cases:
        turns = case.turns
        archive = ArchiveText(turns)
        kept.passages([turn.text[:MAX_LINE_CHARS] for turn in turns])
        for question in case.questions:
            wanted = [turns[index] for index in question.evidence]
            category = question.category
            for name, ranker in variants.items():
                lines = await ranker(question.text, archive, TOP, case.today)
                hit = any(_said(line, turn) for line in lines for turn in wanted)
                hits[name].setdefault(category, []).append(hit)
                shown[name].append(len(lines))
            for name, ranker in timed.items():
                if len(timings[name]) < TIMED:
                    started = time.perf_counter()
                    await ranker(question.text, archive, TOP, case.today)
                    timings[name].append(time.perf_counter() - started)
    results = {}
    for name in variants:
        every = [hit for per in hits[name].values() for hit in per]
        results[name] = {
            "r@5": round(sum(every) / len(every), 4),
            "questions": len(every),
            "per_category": {
                category: {"r@5": round(sum(per) / len(per), 3), "questions": len(per)}
                for category, per in sorted(hits[name].items())
            },
            "lines_shown": round(statistics.mean(shown[name]), 2),
        }
    return results, timings


def percentiles(seconds: list[float]) -> dict[str, float]:
    ms = sorted(1000 * t for t in seconds)
    return {
        "queries": len(ms),
        "p50": round(statistics.median(ms), 2),
        "p95": round(ms[int(0.95 * (len(ms) - 1))], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    started = time.time()
    convs = load_conversations(args.data)
    embedder = OnnxEmbedder.load(install_default_model(MODEL_CACHE))
    zh = zh_cases(build(SEED, USERS))
    try:
        results, timings = asyncio.run(measure(locomo_cases(convs), embedder))
        zh_results, zh_timings = asyncio.run(measure(zh, embedder))
    finally:
        embedder.close()
    per_query = {name: percentiles(seconds) for name, seconds in timings.items()}
    scale = at_scale(convs)
    report: dict[str, Any] = {
        "benchmark": "archive_recall",
        "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "wall_s": round(time.time() - started, 1),
        "data": "LoCoMo dev, every conversation whole, one archive each",
        "conversations": len(convs),
        "lines": sum(len(conv.turns) for conv in convs),
        "top": TOP,
        "variants": results,
        "per_query_ms": per_query,
        "scale": scale,
        "zh": {
            "data": (
                f"bench/zh_assistant_data.py (seed {SEED}): each of {USERS} users one archive,"
                f" their messages and {DISTRACTORS} of other users'"
            ),
            "lines": sum(len(case.turns) for case in zh),
            "variants": zh_results,
            "per_query_ms": {name: percentiles(t) for name, t in zh_timings.items()},
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    for label, variants in (("LoCoMo dev", results), ("Chinese", zh_results)):
        print(f"{label}:")
        for name, result in variants.items():
            cats = ", ".join(f"{c} {v['r@5']}" for c, v in result["per_category"].items())
            print(f"  {name:28s} R@5 {result['r@5']:.3f} ({cats}); lines {result['lines_shown']}")
    for name, figures in per_query.items():
        print(f"per query, {name}: p50 {figures['p50']} ms, p95 {figures['p95']} ms")
    joined, same = scale["build_ms"], scale["same_lines"]
    size = scale["joined_mb"]
    print(f"{scale['lines']:,} lines (joined in {joined} ms, {size} MB), the same picked {same}:")
    for name, figures in scale["per_query_ms"].items():
        print(f"  per query, {name}: p50 {figures['p50']} ms, p95 {figures['p95']} ms")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
