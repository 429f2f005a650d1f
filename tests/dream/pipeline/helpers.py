"""What the pipeline's tests share: the clock, the day the lines are said, and a
conversation captured through the session service."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from somnid.runtime import Runtime
from somnid.sessions.records import Message

NOW = dt.datetime(2026, 10, 10, 22, 0, tzinfo=dt.UTC)
WHOLE = {"by_speaker": False}
"""These scripts answer for a whole window (an exchange, as in a log with an agent); how a
log of people among themselves is read person by person is in test_truth.py."""
SAID = dt.datetime(2023, 10, 4, 18, 30, tzinfo=dt.UTC)


async def conversation(
    rt: Runtime, session: str, *lines: tuple[str | None, str], user: str | None = None
) -> str:
    """``(speaker, text)`` lines, said a minute apart from SAID on (no speaker: the
    user's own line)."""
    messages = [
        Message(
            "user",
            text,
            speaker=speaker,
            user_id=user,
            timestamp=SAID + dt.timedelta(minutes=number),
        )
        for number, (speaker, text) in enumerate(lines)
    ]
    await rt.sessions.append_messages(session, messages)
    closed = await rt.sessions.close(session)
    assert closed.path is not None
    return Path(closed.path).stem
