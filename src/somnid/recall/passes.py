"""What recall does after fusing: time, question echoes, entity bridging, diversity.

Pure functions over one query's scored candidates; the engine feeds them from the index.

* **time**: an entry about a day the query names gets ``time_boost`` × the match's grain
  (a day 1.0 … a year 0.25; :mod:`somnid.recall.dates`), half that when the day is only
  the one it was written on (its ``when``); one whose dates all fall outside the period
  the query's calendar dates bound (``in October 2023``, ``the last week of July``), or
  written after its reference point (``as of May 2023``), loses ``time_bound`` of its score;
  for a query that asks for a time (``When did …``, ``什么时候``), an entry whose text names
  one counts as a month's match;
* **speakers**: an entry that opens with the words of someone the query names (``Ann: …``,
  ``安：…``) gets ``speaker_boost``: what a person said is the first evidence about them;
* **question echoes**: an entry that is mostly a question loses ``question_penalty`` of its
  score (it restates what is asked; the reply after it is reached by its context);
* **brief turns**: a line of a dialogue (``Ann: …``) that says little the query does not
  already say ("Thanks! Sounds like a plan!") loses up to ``brief_turn_penalty``: an answer
  tells something the question does not;
* **entity bridging** (pseudo-relevance feedback): the names in the strongest hits that the
  query does not hold, searched again, and the query vector moved towards those hits;
* **diversity** (MMR): the top k chosen one by one, each trading its score against its
  likeness (cosine) to those already chosen.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

import numpy as np

from somnid.recall.dates import TimeQuery
from somnid.recall.scorer import Scored, rank
from somnid.recall.text import STOP_WORDS, content_terms, query_terms
from somnid.recall.vectors import Vector

# A capitalised word (a name, a place) or a run of CJK characters.
_ENTITY = re.compile(r"\b[A-Z][\w'’-]{2,}|[\u3400-\u9fff]{2,}")


WHEN_SHARE = 0.5
"""A match on the day an entry was written (its ``when``) counts half as much as one on a day
its text speaks of: a message is about the days it names, only said on its own."""


ASKS_WHEN_SHARE = 0.5
"""A query that asks for a time ("When did …", 什么时候) lifts an entry whose text names one
(a day other than the one it was written on) as a match of this weight, a month's: the
answer to "when" is a turn that says when (on LoCoMo dev 73 % of the turns such questions
rest on name a time, 9 % of all turns)."""


def boost_time(
    scored: list[Scored],
    when: TimeQuery,
    dates: Mapping[int, list[tuple[int, int]]],
    written: Mapping[int, int | None],
    boost: float,
    bound: float = 0.0,
) -> list[Scored]:
    """Lift entries about the days the query names; cut ``bound`` of the score of those
    whose dates all fall outside the period its calendar dates bound, or that were written
    after its reference point (an entry with no date at all keeps its score)."""
    if not when or (boost <= 0 and bound <= 0):
        return scored
    for s in scored:
        ranges = dates.get(s.entry_id, [])
        day = written.get(s.entry_id)
        own = [(day, day)] if day is not None else []
        spoken = [r for r in ranges if r not in own]
        match = max(when.match(spoken), WHEN_SHARE * when.match(own))
        if when.asks_when and spoken:
            match = max(match, ASKS_WHEN_SHARE)
        if match > 0 and boost > 0:
            s.components["time"] = round(boost * match, 4)
            s.score += boost * match
        if bound > 0 and when.outside(spoken + own, day):
            cut = s.score * bound
            s.components["time_bound"] = round(-cut, 4)
            s.score -= cut
    return rank(scored)


_OPENING_SPEAKER = re.compile(r"^\s*([^\s:：]{1,40})\s*[:：]")
_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")


def speaker_of(body: str) -> str | None:
    """Who an entry's text opens with (``Ann: …``), lower-cased, or None."""
    match = _OPENING_SPEAKER.match(body)
    return match[1].casefold() if match else None


def boost_speakers(
    scored: list[Scored], speakers: Mapping[int, str | None], query: str, boost: float
) -> list[Scored]:
    """Lift the entries whose speaker the query names (a word of it; a CJK name anywhere)."""
    if boost <= 0:
        return scored
    asked = query.casefold()
    named = {
        speaker
        for speaker in set(speakers.values())
        if speaker
        and (
            speaker in asked
            if _CJK_CHAR.search(speaker)
            else re.search(rf"(?<!\w){re.escape(speaker)}(?!\w)", asked) is not None
        )
    }
    if not named:
        return scored
    for s in scored:
        if speakers.get(s.entry_id) in named:
            s.components["speaker"] = boost
            s.score += boost
    return rank(scored)


def penalise_questions(scored: list[Scored], asks: set[int], penalty: float) -> list[Scored]:
    if penalty <= 0 or not asks:
        return scored
    for s in scored:
        if s.entry_id in asks:
            cut = s.score * penalty
            s.components["question"] = round(-cut, 4)
            s.score -= cut
    return rank(scored)


BRIEF_TURN_WORDS = 20
"""A turn with this many words (or CJK bigrams) the query does not hold, stop words aside,
is not brief: it loses nothing; one with fewer loses a share of the penalty for each missing."""


def penalise_brief_turns(
    scored: list[Scored], bodies: Mapping[int, str], query: str, penalty: float
) -> list[Scored]:
    """An entry of ``bodies`` that is a line of a dialogue (it opens with who said it:
    ``Ann: …``) with ``n`` words of its own, the speaker's name aside, loses
    ``penalty × (1 − n / BRIEF_TURN_WORDS)``: a reaction repeats its subject and adds nothing
    an answer could be found in. A note or a summary (no speaker) is terse, not a reaction."""
    if penalty <= 0 or not bodies:
        return scored
    asked = set(query_terms(query))
    for s in scored:
        body = bodies.get(s.entry_id)
        opening = None if body is None else _OPENING_SPEAKER.match(body)
        if body is None or opening is None:
            continue
        own = len(_said(body[opening.end() :]) - asked)
        cut = penalty * max(0.0, 1.0 - own / BRIEF_TURN_WORDS)
        if cut > 0:
            s.components["brief"] = round(-cut, 4)
            s.score -= cut
    return rank(scored)


@functools.lru_cache(maxsize=4096)
def _said(line: str) -> frozenset[str]:
    """What a line says (kept: the same turns come up search after search, and reading
    their words is most of this pass's cost)."""
    return frozenset(content_terms(line))


def entity_terms(texts: list[str], query: str, limit: int) -> list[str]:
    """Names in the strongest hits that the query does not already hold, most frequent
    first (CJK runs are cut into bigrams, as the index holds them)."""
    asked = query.casefold()
    counts: dict[str, int] = {}
    for text in texts:
        for word in dict.fromkeys(_ENTITY.findall(text)):
            pieces = (
                [word[i : i + 2] for i in range(len(word) - 1)]
                if "\u3400" <= word[0] <= "\u9fff"
                else [word.casefold()]
            )
            for piece in pieces:
                if piece in STOP_WORDS or piece in asked:
                    continue
                counts[piece] = counts.get(piece, 0) + 1
    ordered = sorted(counts, key=lambda term: -counts[term])
    return ordered[:limit]


def rocchio(query: Vector, seeds: list[Vector], beta: float = 0.5) -> Vector:
    """The query vector moved towards the mean of the seeds' vectors, normalised."""
    if not seeds:
        return query
    moved = query + beta * np.mean(np.stack(seeds), axis=0)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else query


def mmr(scored: list[Scored], vectors: Mapping[int, Vector], lam: float, k: int) -> list[Scored]:
    """Maximal marginal relevance over the first ``3k``: the rest keep their order after."""
    if lam >= 1.0 or len(scored) <= 1:
        return scored
    pool = scored[: 3 * k]
    rest = scored[3 * k :]
    best = max(s.score for s in pool) or 1.0
    chosen: list[Scored] = []
    chosen_vectors: list[Vector] = []
    remaining = list(pool)
    while remaining and len(chosen) < k:

        def value(s: Scored) -> float:
            vector = vectors.get(s.entry_id)
            like = (
                max(float(vector @ other) for other in chosen_vectors)
                if vector is not None and chosen_vectors
                else 0.0
            )
            return lam * (s.score / best) - (1.0 - lam) * like

        pick = max(remaining, key=value)
        remaining.remove(pick)
        chosen.append(pick)
        vector = vectors.get(pick.entry_id)
        if vector is not None:
            chosen_vectors.append(vector)
    # Chosen ones keep their scores; their order is the MMR order.
    return chosen + remaining + rest
