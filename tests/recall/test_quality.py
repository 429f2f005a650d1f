"""Recall with the real multilingual model: Chinese, English, and across the two."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.embed.onnx import OnnxEmbedder
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime

MEMORIES = [
    (
        "venv-pip",
        "Install Python packages with the venv's own pip",
        "Never pip install into the system Python; run .venv/bin/python -m pip install.",
    ),
    (
        "deploy-window",
        "Deploys happen Tuesday to Thursday only",
        "The team freezes production deploys on Mondays and Fridays.",
    ),
    (
        "alice-coffee",
        "Alice drinks oat-milk flat whites",
        "Bring her one before the Monday review.",
    ),
    ("用户偏好-简洁", "用户喜欢简洁的回答", "回答时先给结论，再给理由，避免长篇大论。"),
    (
        "数据库备份",
        "每天凌晨三点备份 PostgreSQL 数据库",
        "备份脚本在 /opt/backup/pg.sh，保留七天。",
    ),
    ("猫的名字", "用户的猫叫小橘", "小橘是一只橘猫，三岁，怕吸尘器。"),
    (
        "rust-borrow",
        "Borrow checker pitfall with iterators",
        "Collect into a Vec before mutating the map you are iterating over.",
    ),
]


@pytest.fixture
async def runtime(tmp_path: Path, int8_embedder: OnnxEmbedder) -> AsyncIterator[Runtime]:
    settings = Settings(data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"})
    clock = ManualClock(dt.datetime(2026, 10, 3, tzinfo=dt.UTC))
    async with Runtime.open(settings, clock=clock, embedder=int8_embedder) as rt:
        for name, description, body in MEMORIES:
            await rt.memories.create(Kind.KNOWLEDGE, name, description=description, body=body)
        await rt.index.wait_idle()
        yield rt


CASES = [
    ("how should I install a python package", "venv-pip"),
    ("can we ship to production on Friday?", "deploy-window"),
    ("what coffee should I get for Alice", "alice-coffee"),
    ("数据库多久备份一次", "数据库备份"),
    ("我的猫叫什么", "猫的名字"),
    ("回答风格要注意什么", "用户偏好-简洁"),
    # English query, Chinese memory. (The int8 e5-small leans to its own language: vague
    # Chinese questions about the English deploy memory rank same-language ones first.)
    ("what is my cat called", "猫的名字"),
    ("cannot mutate hashmap while looping over it", "rust-borrow"),
]
"""Queries and the memory each must find first (the postgres index answers them too)."""


@pytest.mark.parametrize(("query", "expected"), CASES)
async def test_the_right_memory_comes_first(runtime: Runtime, query: str, expected: str) -> None:
    hits = await runtime.recall.search(query, limit=3)
    assert hits and hits[0].name == expected, [(h.name, h.score) for h in hits]


async def test_a_clear_cue_hints_once_and_an_unrelated_one_stays_silent(runtime: Runtime) -> None:
    fired = await runtime.assoc.thought("s1", "I'm about to pip install requests globally")
    assert fired.reason == "fired" and [h.name for h in fired.items] == ["venv-pip"]
    again = await runtime.assoc.thought("s1", "pip install requests into the system python")
    assert "venv-pip" not in [h.name for h in again.items]  # habituated in this session
    other = await runtime.assoc.thought("s2", "pip install requests into the system python")
    assert [h.name for h in other.items] == ["venv-pip"]  # a new session sees it again
    quiet = await runtime.assoc.thought("s3", "the weather in Lisbon looks lovely this week")
    assert quiet.items == []
    assert (
        await runtime.assoc.action("s4", "recall_memories", {"query": "pip"})
    ).reason == "skipped"
