"""What capture deals in: messages, tool calls, and the answers about the logs they go to.

Plain values and the checks on client text; the writing itself is in
:mod:`somnid.sessions.logs`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from somnid.errors import InvalidInput
from somnid.memory.text import control_char

MAX_ID_CHARS = 200
DEFAULT_USER = "default"
_NO = frozenset({"false", "no", "off"})

Role = Literal["user", "agent"]
SkipReason = Literal["empty", "disabled", "duplicate"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    text: str
    speaker: str | None = None
    user_id: str | None = None
    chat_type: str | None = None
    timestamp: dt.datetime | None = None
    """When it was said, if not now (a replayed or buffered conversation); a naive time is
    in the configured zone."""
    id: str | None = None
    """The client's id for this line: a second line with the same id in the same session is
    not written again (a re-send after a lost answer)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    call: str
    result: str = ""
    error: str | None = None
    reason: str | None = None
    timestamp: dt.datetime | None = None
    """When the call was made, if not now."""
    id: str | None = None
    """As :attr:`Message.id`."""


@dataclass(frozen=True, slots=True)
class Appended:
    """What one append did. ``path`` (relative to the data dir) is the log written to, None
    if nothing was; ``skipped`` lists (index in the request, reason)."""

    path: PurePosixPath | None
    written: int
    truncated: int
    skipped: list[tuple[int, SkipReason]]
    message_count: int


@dataclass(frozen=True, slots=True)
class Closed:
    """A closed log: its path (relative), its part number and its entries."""

    path: PurePosixPath | None
    part: int = 0
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class NoDream:
    """The session's logs now marked ``dream: false`` (relative, oldest first) and its open
    log, if it has one."""

    paths: list[PurePosixPath]
    open: PurePosixPath | None


@dataclass(frozen=True, slots=True)
class PendingLog:
    path: Path
    open: bool
    dream: bool = True
    """False when its front-matter says ``dream: false``: never shown to a model."""

    @property
    def dreamable(self) -> bool:
        """A dream may read it now: closed, and not marked ``dream: false``."""
        return self.dream and not self.open


def is_pending(meta: Any) -> bool:
    """Whether a log's front-matter leaves it for a dream: any status but ``processed``
    (a log with no status is pending). The one definition of "pending"."""
    return str(meta.get("status", "pending")) != "processed"


def wants_dream(meta: Any) -> bool:
    """Whether a log's front-matter lets a dream read it: anything but ``dream: false``
    (``no`` and ``off`` count as false too: a person may write them by hand)."""
    value = meta.get("dream", True)
    if isinstance(value, str):
        return value.strip().lower() not in _NO
    return value is not False


def check_session_id(session_id: str) -> None:
    """A session id is client text, never used in a path: 1–200 characters, no controls."""
    if not session_id or len(session_id) > MAX_ID_CHARS:
        raise InvalidInput(f"a session id has 1 to {MAX_ID_CHARS} characters")
    check_printable(session_id, "session id")


def check_printable(value: str, what: str) -> None:
    ch = control_char(value)
    if ch is not None:
        raise InvalidInput(f"the {what} contains a control character ({ord(ch):#x})")
