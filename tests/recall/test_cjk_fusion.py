"""The keyword half weighs less when a query's terms are CJK bigrams (guesses at words).

A stand-in embedder gives each memory a fixed cosine to every query, so only the fusion rule
is under test: the near miss that shares the question's words (一碰就出问题, said of a
computer) must not outrank the memory the vectors prefer in Chinese, while in English, whose
terms are whole words, the keyword half keeps its full weight.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from somnid.config import Settings
from somnid.embed.base import Matrix, normalize_rows, text_list
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.engine import Hit
from somnid.runtime import Runtime

# (name, description, the cosine of its vector to any query)
ZH = [
    ("allergy", "我室友对花生过敏，聚餐时要注意", 0.90),
    ("computer", "我室友的电脑一碰就出问题，又拿去修了", 0.86),
    ("weather", "明天会下雨，记得带伞", 0.80),
]
EN = [
    ("allergy", "My roommate is allergic to peanuts, careful at dinners", 0.90),
    ("computer", "My roommate's laptop breaks whenever touched, repaired again", 0.86),
    ("weather", "Rain tomorrow, take an umbrella", 0.80),
]


class FixedCosines:
    """Every query is one vector; a passage sits at the cosine its memory is given."""

    name = "fixed-cosines"
    dim = 2

    def __init__(self, memories: list[tuple[str, str, float]]) -> None:
        self.cosines = {description: cosine for _name, description, cosine in memories}

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        rows = []
        for text in text_list(texts):
            cosine = next((c for d, c in self.cosines.items() if d in text), 0.0)
            rows.append([cosine, float(np.sqrt(1.0 - cosine**2))])
        return normalize_rows(np.array(rows, dtype=np.float32).reshape(-1, self.dim))

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return normalize_rows(np.array([[1.0, 0.0]] * len(text_list(texts)), dtype=np.float32))

    def close(self) -> None:
        return None


async def ranked(tmp_path: Path, memories: list[tuple[str, str, float]], query: str) -> list[Hit]:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"})
    clock = ManualClock(dt.datetime(2026, 10, 3, tzinfo=dt.UTC))
    async with Runtime.open(settings, clock=clock, embedder=FixedCosines(memories)) as rt:
        for name, description, _cosine in memories:
            await rt.memories.create(Kind.KNOWLEDGE, name, description=description, body="")
        await rt.index.wait_idle()
        return await rt.recall.search(query, limit=3)


async def test_cjk_bigram_matches_do_not_outweigh_the_meaning(tmp_path: Path) -> None:
    hits = await ranked(tmp_path, ZH, "什么东西一碰就出问题")
    assert [hit.name for hit in hits][:2] == ["allergy", "computer"]
    # The near miss is the best keyword hit, at half the keyword weight: 0.4 × 0.5.
    assert hits[1].components["keyword"] == 0.2
    assert "keyword" not in hits[0].components or hits[0].components["keyword"] == 0.0


async def test_whole_words_keep_the_keyword_half_full(tmp_path: Path) -> None:
    hits = await ranked(tmp_path, EN, "laptop breaks whenever touched")
    assert [hit.name for hit in hits][:2] == ["computer", "allergy"]
    assert hits[0].components["keyword"] == 0.4
