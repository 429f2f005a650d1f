"""LoCoMo for retrieval-only evaluation: the data, a plain BM25 baseline, and the metrics.

Everything here is pure and fast (no somnid, no model), so the unit tests can pin it. The
design follows the team's reference notes (``eval-and-models.md``, Part C): one memory per
turn, evidence ids normalised as in Part B §1, recall@k as the share of a question's evidence
turns found in the top k, nDCG@10 with binary gains. Answers are never read.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from somnid.memory.dates.words import MONTHS

# LoCoMo's evaluation code numbers the categories; these are its names (the dataset README).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# Report order: the reference tables' order, then the two pooled groups.
GROUPS = (
    "single-hop",
    "multi-hop",
    "temporal",
    "open-domain",
    "adversarial",
    "all-but-adversarial",
    "all",
)
DEPTH = 20  # ranks are read over the top 20
RECALL_KS = (1, 5, 10, 20)
METRICS = (
    *(f"r@{k}" for k in RECALL_KS),
    *(f"hit@{k}" for k in RECALL_KS),
    "ndcg@10",
    "mrr",
)

_SESSION_KEY = re.compile(r"session_(\d+)")
# One evidence id: D, an optional colon, the session, a colon, the turn (leading zeros allowed).
_EVIDENCE_ID = re.compile(r"D:?(\d+):(\d+)")
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")
_DIA_ID = re.compile(r"D(\d+):(\d+)")


# --- the data ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Turn:
    """One line of the conversation, with the date-time of its session."""

    dia_id: str  # "D1:3"
    speaker: str
    text: str
    caption: str | None  # the BLIP caption of a shared photo (the images are not released)
    when: dt.datetime  # the session's date-time; the data has no zone, taken as UTC

    @property
    def name(self) -> str:
        """The turn's name in evidence and reports: ``D1:3`` → ``d1-3``. It is not what
        somnid stores the turn under (see :func:`stored_name`)."""
        return entry_name(self.dia_id)

    @property
    def body(self) -> str:
        """What a person would store: who said what, and the photo they shared."""
        line = f"{self.speaker}: {self.text}"
        return f"{line} [shares a photo: {self.caption}]" if self.caption else line

    @property
    def description(self) -> str:
        """A one-line summary carrying the speaker and the session date (``Caroline on 8
        May 2023``): dates in the memory text help temporal questions."""
        return f"{self.speaker} on {self.when.day} {self.when:%B %Y}"

    @property
    def text_for_keywords(self) -> str:
        """The words somnid is given for this turn; the BM25 baseline indexes the same."""
        return f"{self.description}\n{self.body}"


@dataclass(frozen=True, slots=True)
class Question:
    index: int  # position in the sample's ``qa`` list
    text: str
    category: int
    evidence: tuple[str, ...]  # entry names (``d1-3``), normalised, existing, de-duplicated

    @property
    def group(self) -> str:
        return CATEGORIES.get(self.category, f"category-{self.category}")


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


@dataclass(slots=True)
class EvidenceNotes:
    """What evidence cleaning did, so a report can say it."""

    questions: int = 0
    questions_scored: int = 0
    skipped_no_evidence: list[str] = field(default_factory=list)  # "conv-26#q12"
    ids_seen: int = 0  # raw evidence strings
    multi_id_strings: list[str] = field(default_factory=list)  # "D8:6; D9:17"
    rewritten: list[str] = field(default_factory=list)  # "D:11:26 -> D11:26"
    malformed_dropped: list[str] = field(default_factory=list)  # "D"
    missing_dropped: list[str] = field(default_factory=list)  # "conv-42: D10:19"
    duplicates_dropped: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "questions": self.questions,
            "questions_scored": self.questions_scored,
            "skipped_no_evidence": self.skipped_no_evidence,
            "evidence_strings": self.ids_seen,
            "multi_id_strings": self.multi_id_strings,
            "rewritten": self.rewritten,
            "malformed_dropped": self.malformed_dropped,
            "missing_dropped": self.missing_dropped,
            "duplicates_dropped": self.duplicates_dropped,
        }


def entry_name(dia_id: str) -> str:
    """``D1:3`` → ``d1-3``: a dialog id as a safe, lower-case entry name."""
    match = _DIA_ID.fullmatch(dia_id)
    if match is None:
        raise ValueError(f"not a dialog id: {dia_id!r}")
    return f"d{int(match[1])}-{int(match[2])}"


def stored_name(sample_id: str, dia_id: str) -> str:
    """The opaque entry name a turn is stored under in somnid (``t`` and 12 hex digits).

    Entry names are indexed as keywords (weight 3): a name made of the dialog id would let
    the day in "on 9 July" match every 9th turn. A hash of the sample and the dialog id
    carries nothing a question can match, and is the same on every run.
    """
    digest = hashlib.sha256(f"{sample_id}/{dia_id}".encode()).hexdigest()
    return f"t{digest[:12]}"


def normalise_evidence(raw: str) -> list[tuple[str, str | None]]:
    """Split one evidence string into parts, each with its clean dialog id or None.

    Split on ``;``, ``,`` and whitespace; keep each part that reads as ``D``, an optional
    ``:``, the session, ``:``, the turn (leading zeros allowed), rewritten ``D<s>:<t>``
    (``D:11:26`` → ``D11:26``, ``D30:05`` → ``D30:5``); anything else gets None.
    """
    parts: list[tuple[str, str | None]] = []
    for part in _EVIDENCE_SEPARATORS.split(raw.strip()):
        if part:
            match = _EVIDENCE_ID.fullmatch(part)
            parts.append((part, None if match is None else f"D{int(match[1])}:{int(match[2])}"))
    return parts


def parse_session_date(text: str) -> dt.datetime:
    """``"1:56 pm on 8 May, 2023"`` → 2023-05-08 13:56 UTC."""
    match = re.fullmatch(
        r"\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*",
        text,
        re.IGNORECASE,
    )
    if match is None:
        raise ValueError(f"unreadable session date: {text!r}")
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month in session date: {text!r}")
    hour24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return dt.datetime(int(year), month, int(day), hour24, int(minute), tzinfo=dt.UTC)


_MONTHS = {name: number for number, name in enumerate(MONTHS, start=1)}


def load_conversations(
    path: Path, notes: EvidenceNotes | None = None, *, first: int | None = None
) -> list[Conversation]:
    """Read a LoCoMo JSON file (a list of samples) into conversations (only the ``first``
    N when given).

    Sessions are taken in number order; a listed date without a session is ignored (conv-26
    lists dates up to 35 but has sessions up to 19). Evidence is normalised, ids that name
    no turn are dropped, and a question left with no evidence is skipped; ``notes`` records
    every such decision.
    """
    samples = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(samples, list):
        raise ValueError(f"{path}: expected a JSON list of samples")
    notes = notes if notes is not None else EvidenceNotes()
    return [parse_sample(sample, notes) for sample in samples[:first]]


def parse_sample(sample: Mapping[str, Any], notes: EvidenceNotes) -> Conversation:
    sample_id = str(sample["sample_id"])
    conv = sample["conversation"]
    sessions = sorted(
        (int(m[1]), key) for key in conv if (m := _SESSION_KEY.fullmatch(key)) is not None
    )
    turns: list[Turn] = []
    for _, key in sessions:
        when = parse_session_date(str(conv[f"{key}_date_time"]))
        for raw in conv[key]:
            caption = str(raw.get("blip_caption") or "").strip()
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    speaker=str(raw["speaker"]),
                    text=str(raw["text"]),
                    caption=caption or None,
                    when=when,
                )
            )
    known = {turn.name for turn in turns}
    if len(known) != len(turns):
        raise ValueError(f"{sample_id}: two turns share a dialog id")
    questions: list[Question] = []
    for index, qa in enumerate(sample.get("qa", [])):
        notes.questions += 1
        evidence = _clean_evidence(sample_id, qa.get("evidence") or [], known, notes)
        if not evidence:
            notes.skipped_no_evidence.append(f"{sample_id}#q{index}")
            continue
        notes.questions_scored += 1
        questions.append(Question(index, str(qa["question"]), int(qa["category"]), evidence))
    speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
    return Conversation(sample_id, speakers, tuple(turns), tuple(questions))


def _clean_evidence(
    sample_id: str, raw_ids: Iterable[object], known: set[str], notes: EvidenceNotes
) -> tuple[str, ...]:
    names: list[str] = []
    for raw in raw_ids:
        notes.ids_seen += 1
        text = str(raw)
        parts = normalise_evidence(text)
        if len(parts) > 1:
            notes.multi_id_strings.append(f"{sample_id}: {text}")
        for part, dia_id in parts:
            if dia_id is None:
                notes.malformed_dropped.append(f"{sample_id}: {part}")
                continue
            if dia_id != part:
                notes.rewritten.append(f"{sample_id}: {part} -> {dia_id}")
            name = entry_name(dia_id)
            if name not in known:
                notes.missing_dropped.append(f"{sample_id}: {dia_id}")
            elif name in names:
                notes.duplicates_dropped += 1
            else:
                names.append(name)
    return tuple(names)


# --- a plain BM25 baseline --------------------------------------------------------------

# The reference's 71-word English stop list (Part C, "Methods").
# fmt: off
STOP_WORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "he", "her", "hers", "him", "his",
    "how", "i", "i'm", "if", "in", "into", "is", "it", "it's", "its", "me", "my", "of", "on",
    "or", "our", "she", "so", "than", "that", "the", "their", "them", "then", "there", "these",
    "they", "this", "to", "up", "was", "we", "were", "what", "when", "where", "which", "who",
    "whom", "why", "will", "with", "would", "you", "your", "yours",
))
# fmt: on
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_CJK_RUN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]+")


def tokenize(text: str) -> list[str]:
    """Lower-case words (with an optional ``'`` suffix), minus stop words; CJK runs give
    every character and every adjacent pair."""
    lowered = text.lower().replace("\u2019", "'")
    terms = [word for word in _WORD.findall(lowered) if word not in STOP_WORDS]
    for run in _CJK_RUN.findall(lowered):
        terms.extend(run)
        terms.extend(run[i : i + 2] for i in range(len(run) - 1))
    return terms


class BM25:
    """Okapi BM25 (k1 1.2, b 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5))) over a fixed
    list of documents. Each distinct query term counts once; ties keep document order."""

    def __init__(self, documents: Sequence[str], *, k1: float = 1.2, b: float = 0.75) -> None:
        self.size = len(documents)
        postings: dict[str, dict[int, int]] = {}
        lengths = np.zeros(self.size, dtype=np.float64)
        for doc, text in enumerate(documents):
            counts = Counter(tokenize(text))
            lengths[doc] = sum(counts.values())
            for term, count in counts.items():
                postings.setdefault(term, {})[doc] = count
        average = float(lengths.mean()) if self.size and lengths.mean() > 0 else 1.0
        norm = k1 * (1.0 - b + b * lengths / average)
        self._terms: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        for term, docs in postings.items():
            ids = np.fromiter(docs.keys(), dtype=np.intp, count=len(docs))
            tf = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
            idf = math.log(1.0 + (self.size - len(docs) + 0.5) / (len(docs) + 0.5))
            self._terms[term] = (ids, idf * tf * (k1 + 1.0) / (tf + norm[ids]))

    def scores(self, query: str) -> npt.NDArray[np.float64]:
        total = np.zeros(self.size, dtype=np.float64)
        for term in dict.fromkeys(tokenize(query)):
            posting = self._terms.get(term)
            if posting is not None:
                total[posting[0]] += posting[1]
        return total

    def rank(self, query: str, limit: int = DEPTH) -> list[int]:
        """Document indices, best first; every document is ranked (ties in stored order)."""
        order = np.argsort(-self.scores(query), kind="stable")
        return [int(doc) for doc in order[:limit]]


# --- metrics ----------------------------------------------------------------------------


def score_ranking(ranked: Sequence[str], evidence: Iterable[str]) -> dict[str, float]:
    """Score one question's ranking (entry names, best first) against its evidence names.

    Ranks are read over the top ``DEPTH``. An evidence item is found at the first rank where
    a memory covering it appears (at turn level, the memory of that name; a repeated name
    finds nothing new).

    - ``r@k``: the share of the evidence found in the top k (LoCoMo's recall);
    - ``hit@k``: 1 if any evidence is in the top k;
    - ``ndcg@10``: a rank gains 1 when it finds an evidence item not found higher up,
      discounted by log2(rank + 1); the ideal DCG is over min(|evidence|, 10) ranks;
    - ``mrr``: 1 / the (1-based) rank of the first evidence found, 0 if none in the top 20.
    """
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence cannot be scored")
    found_at: dict[str, int] = {}
    for rank, name in enumerate(ranked[:DEPTH], start=1):
        if name in wanted and name not in found_at:
            found_at[name] = rank
    ranks = sorted(found_at.values())
    result: dict[str, float] = {}
    for k in RECALL_KS:
        within = sum(1 for rank in ranks if rank <= k)
        result[f"r@{k}"] = within / len(wanted)
        result[f"hit@{k}"] = 1.0 if within else 0.0
    dcg = sum(1.0 / math.log2(rank + 1) for rank in ranks if rank <= 10)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), 10) + 1))
    result["ndcg@10"] = dcg / ideal
    result["mrr"] = 1.0 / ranks[0] if ranks else 0.0
    return result


def groups_of(category: int) -> tuple[str, ...]:
    """The report groups a question of ``category`` counts in."""
    name = CATEGORIES.get(category, f"category-{category}")
    pooled = ("all",) if name == "adversarial" else ("all-but-adversarial", "all")
    return (name, *pooled)


def aggregate(rows: Iterable[tuple[int, Mapping[str, float]]]) -> dict[str, dict[str, float]]:
    """Mean of each metric per group, from ``(category, scores)`` rows; ``n`` per group.

    Groups with no question are left out.
    """
    sums: dict[str, dict[str, float]] = {}
    for category, scores in rows:
        for group in groups_of(category):
            bucket = sums.setdefault(group, dict.fromkeys(("n", *METRICS), 0.0))
            bucket["n"] += 1
            for metric in METRICS:
                bucket[metric] += scores[metric]
    ordered = [g for g in GROUPS if g in sums] + sorted(set(sums) - set(GROUPS))
    return {
        group: {
            "n": int(sums[group]["n"]),
            **{metric: sums[group][metric] / sums[group]["n"] for metric in METRICS},
        }
        for group in ordered
    }


def aggregate_hints(rows: Iterable[tuple[int, bool, bool]]) -> dict[str, dict[str, float | None]]:
    """Per group, from ``(category, fired, fired hint holds evidence)`` rows: how often a hint
    fires, and how often a fired hint holds an evidence turn (None when none fired)."""
    counts: dict[str, list[int]] = {}
    for category, fired, holds in rows:
        for group in groups_of(category):
            bucket = counts.setdefault(group, [0, 0, 0])
            bucket[0] += 1
            bucket[1] += int(fired)
            bucket[2] += int(fired and holds)
    ordered = [g for g in GROUPS if g in counts] + sorted(set(counts) - set(GROUPS))
    return {
        group: {
            "n": counts[group][0],
            "fired": counts[group][1],
            "with_evidence": counts[group][2],
            "fire_rate": counts[group][1] / counts[group][0],
            "precision": counts[group][2] / counts[group][1] if counts[group][1] else None,
        }
        for group in ordered
    }


def percentiles(samples: Sequence[float]) -> dict[str, float | None]:
    """p50, p95 and the mean of ``samples`` (seconds in, milliseconds out)."""
    if not samples:
        return {"p50_ms": None, "p95_ms": None, "mean_ms": None, "count": 0}
    values = np.asarray(samples, dtype=np.float64) * 1000.0
    return {
        "p50_ms": float(np.percentile(values, 50)),
        "p95_ms": float(np.percentile(values, 95)),
        "mean_ms": float(values.mean()),
        "count": len(samples),
    }
