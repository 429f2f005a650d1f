"""Concurrent creates over the wire against a real daemon: 32 at once, each with a name or
id somnid generates, all succeed and none is given twice."""

from __future__ import annotations

import asyncio
import re

import httpx

from tests.daemon import Daemon


async def _flood(daemon: Daemon, path: str, make: object, count: int = 32) -> list[httpx.Response]:
    async with daemon.async_client(timeout=120) as client:
        return await asyncio.gather(
            *(client.post(path, json=make(i)) for i in range(count))  # type: ignore[operator]
        )


def test_concurrent_creates_with_generated_names_all_succeed(daemon: Daemon) -> None:
    intentions = asyncio.run(_flood(daemon, "/v1/intentions", lambda i: {"what": f"do {i}"}))
    assert [r.status_code for r in intentions] == [201] * 32
    assert len({r.json()["id"] for r in intentions}) == 32
    episodes = asyncio.run(
        _flood(daemon, "/v1/memories/episode", lambda i: {"body": f"it happened {i}"})
    )
    assert [r.status_code for r in episodes] == [201] * 32
    assert len({r.json()["name"] for r in episodes}) == 32
    tools = asyncio.run(
        _flood(daemon, "/v1/tools/add_intention", lambda i: {"args": {"what": f"tool {i}"}})
    )
    assert [r.status_code for r in tools] == [200] * 32
    ids = {re.search(r"pi-\d{8}-\d+", r.json()["result"]).group(0) for r in tools}  # type: ignore[union-attr]
    assert len(ids) == 32
