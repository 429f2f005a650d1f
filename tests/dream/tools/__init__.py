"""Tests of the dream's tools against a real runtime on a temp data dir."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import PurePosixPath
from typing import Any

from somnid.config import Settings
from somnid.dream.tools import DreamTools
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.sessions.records import Message, Role

START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)


@contextlib.asynccontextmanager
async def dreaming(
    settings: Settings, clock: ManualClock | None = None, lang: str = "en", **options: Any
) -> AsyncIterator[tuple[Runtime, DreamTools]]:
    """A real runtime and the dream tools built from its parts, as the daemon wires them."""
    async with Runtime.open(settings, clock=clock or ManualClock(START)) as rt:
        tools = DreamTools(
            rt.memories, rt.recall, rt.sessions, rt.maintenance, rt.layout, rt.clock, lang,
            **options,
        )  # fmt: skip
        yield rt, tools


async def make_log(
    rt: Runtime, session_id: str, *texts: str, user: str | None = None, close: bool = True
) -> str:
    """A session log holding ``texts`` (user and agent in turn); returns its stem."""
    roles: tuple[Role, Role] = ("user", "agent")
    messages = [Message(roles[index % 2], text, user_id=user) for index, text in enumerate(texts)]
    appended = await rt.sessions.append_messages(session_id, messages)
    assert appended.path is not None
    if close:
        await rt.sessions.close(session_id)
    return PurePosixPath(appended.path).stem
