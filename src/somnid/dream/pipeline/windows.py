"""A session log as the pipeline reads it: numbered lines with speaker and time, in windows.

Line ids (``L1``, ``L2``, …) number the log's turns in file order; they are what a model
names as evidence, and what somnid maps back to who said it and when. A window holds as
many whole lines as fit ``budget`` estimated tokens (a longer line is cut, visibly).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from somnid.recall.assoc import estimate_tokens
from somnid.sessions.transcript import Transcript, Turn

MAX_LINE_TOKENS = 400
AGENT = "agent"


@dataclass(frozen=True, slots=True)
class Line:
    id: str
    role: str
    speaker: str
    """Who spoke: the named speaker, else the log's user for ``user`` lines, else the role."""
    when: dt.datetime | None
    text: str
    own_user: bool
    """Said by the log's own user (profile facts may go to that user's profile)."""


@dataclass(frozen=True, slots=True)
class Window:
    log: str
    number: int
    lines: tuple[Line, ...]

    @property
    def ids(self) -> list[str]:
        return [line.id for line in self.lines]

    def line(self, line_id: str) -> Line | None:
        return next((line for line in self.lines if line.id == line_id), None)


def log_user(transcript: Transcript) -> str:
    value = transcript.meta.get("user")
    text = str(value).strip() if value is not None else ""
    return text or "default"


def _speaker(turn: Turn, user: str) -> tuple[str, bool]:
    if turn.role == "user":
        if not turn.speaker:
            return user, True
        return turn.speaker, turn.speaker.casefold() == user.casefold()
    if turn.role == "tool":
        return "tool", False
    return turn.speaker or AGENT, False


def _text(turn: Turn) -> str:
    if turn.tool is not None:
        parts = [f"called {turn.tool.call}"]
        if turn.tool.error:
            parts.append(f"error: {turn.tool.error}")
        elif turn.tool.result:
            parts.append(f"result: {turn.tool.result}")
        return "; ".join(parts)
    return " ".join(turn.text.split())


def lines_of(transcript: Transcript) -> list[Line]:
    user = log_user(transcript)
    lines = []
    for number, turn in enumerate(transcript.turns, start=1):
        speaker, own = _speaker(turn, user)
        text = _text(turn)
        if estimate_tokens(text) > MAX_LINE_TOKENS:
            text = text[: MAX_LINE_TOKENS * 4].rstrip() + " …(cut)"
        lines.append(Line(f"L{number}", turn.role, speaker, turn.timestamp, text, own))
    return lines


def windows_of(log: str, lines: list[Line], budget: int) -> list[Window]:
    """``lines`` in windows of about ``budget`` tokens, in order, never splitting a line."""
    windows: list[Window] = []
    current: list[Line] = []
    used = 0
    for line in lines:
        cost = estimate_tokens(line.text) + 12  # id, time and speaker
        if current and used + cost > budget:
            windows.append(Window(log, len(windows) + 1, tuple(current)))
            current, used = [], 0
        current.append(line)
        used += cost
    if current:
        windows.append(Window(log, len(windows) + 1, tuple(current)))
    return windows


def render(window: Window, tz: dt.tzinfo) -> str:
    """The window as the model sees it: one line each, ``L7 [2023-05-08 13:56] Ann: …``,
    the time only where it changed (``[14:02]`` within the same day): a conversation's
    lines mostly share it, and every repeat costs tokens. Line text is data: it is shown
    after the speaker, never as a header of its own."""
    rows = []
    day = minute = None
    for line in window.lines:
        when = ""
        if line.when is not None:
            local = line.when.astimezone(tz)
            if local.date() != day:
                when = f" [{local:%Y-%m-%d %H:%M}]"
            elif (local.hour, local.minute) != minute:
                when = f" [{local:%H:%M}]"
            day, minute = local.date(), (local.hour, local.minute)
        rows.append(f"{line.id}{when} {line.speaker}: {line.text}")
    return "\n".join(rows)
