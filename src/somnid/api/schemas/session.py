"""Bodies of the session-capture routes."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field, field_validator

from somnid.api.schemas.common import Schema
from somnid.memory.clock import parse_time
from somnid.sessions.records import Appended, Closed, NoDream

MAX_BATCH = 500
MAX_FIELD = 1_000_000


class MessageIn(Schema):
    role: Literal["user", "agent"]
    text: str = Field(
        max_length=MAX_FIELD,
        description="Cut at capture.maxMessageChars with a visible marker; empty is skipped.",
    )
    user_id: str | None = Field(
        None, min_length=1, max_length=200, description="Names the log's user when it opens."
    )
    chat_type: str | None = Field(None, min_length=1, max_length=100)
    speaker: str | None = Field(
        None, max_length=200, description="Who spoke, written as [user:<speaker>]."
    )
    timestamp: str | None = Field(
        None,
        max_length=64,
        description="When it was said, ISO 8601 (e.g. 2023-05-08T13:56:00+02:00); a time "
        "without an offset is in the configured zone. Absent: the time it arrives. Send it "
        "for replayed or buffered messages: dreams date episodes by it.",
        examples=["2023-05-08T13:56:00+02:00"],
    )

    id: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="The client's id for this line: a line whose id the session already "
        "wrote is skipped (reason duplicate), so a re-send after a lost answer is written once.",
    )

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time(value)
        return value

    def moment(self) -> dt.datetime | None:
        return parse_time(self.timestamp) if self.timestamp is not None else None


class MessagesIn(Schema):
    """One message is a batch of one; a batch is written in order, in one append."""

    messages: list[MessageIn] = Field(min_length=1, max_length=MAX_BATCH)


class ToolCallIn(Schema):
    call: str = Field(min_length=1, max_length=MAX_FIELD, description='e.g. search(query="x")')
    result: str = Field("", max_length=MAX_FIELD, description="Cut at 300 characters.")
    error: str | None = Field(None, max_length=MAX_FIELD, description="Cut at 300 characters.")
    reason: str | None = Field(None, max_length=MAX_FIELD)
    timestamp: str | None = Field(
        None,
        max_length=64,
        description="When the call was made, ISO 8601; absent: the time it arrives.",
        examples=["2023-05-08T13:56:00+02:00"],
    )
    id: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="As a message's id: a re-sent tool call is written once.",
    )

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            parse_time(value)
        return value

    def moment(self) -> dt.datetime | None:
        return parse_time(self.timestamp) if self.timestamp is not None else None


class SkippedOut(Schema):
    index: int = Field(description="Position in the request.")
    reason: Literal["empty", "disabled", "duplicate"]


class CaptureOut(Schema):
    session_id: str
    path: str | None = Field(description="The log written to, relative to the data dir.")
    written: int
    truncated: int = Field(description="Messages cut at capture.maxMessageChars.")
    skipped: list[SkippedOut] = Field(
        description="Entries not written: empty text, or capture disabled."
    )
    message_count: int = Field(description="Entries in that log so far.")

    @classmethod
    def of(cls, session_id: str, appended: Appended) -> CaptureOut:
        return cls(
            session_id=session_id,
            path=str(appended.path) if appended.path else None,
            written=appended.written,
            truncated=appended.truncated,
            skipped=[SkippedOut(index=index, reason=reason) for index, reason in appended.skipped],
            message_count=appended.message_count,
        )


class CloseOut(Schema):
    session_id: str
    path: str | None = Field(description="The log closed; null if the session had none open.")
    part: int = Field(description="Its part number (1 unless the session rolled over).")
    message_count: int = Field(description="Entries in that log.")

    @classmethod
    def of(cls, session_id: str, closed: Closed) -> CloseOut:
        return cls(
            session_id=session_id,
            path=str(closed.path) if closed.path else None,
            part=closed.part,
            message_count=closed.message_count,
        )


class CloseAllOut(Schema):
    closed: int
    paths: list[str]


class NoDreamOut(Schema):
    session_id: str
    paths: list[str] = Field(
        description="The session's pending logs now marked dream: false (the open one "
        "included), relative to the data dir, oldest first."
    )
    open_log: str | None = Field(
        description="The session's open log, if any: its later parts start marked too."
    )

    @classmethod
    def of(cls, session_id: str, marked: NoDream) -> NoDreamOut:
        return cls(
            session_id=session_id,
            paths=[str(path) for path in marked.paths],
            open_log=str(marked.open) if marked.open else None,
        )
