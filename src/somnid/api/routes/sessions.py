from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.session import (
    CaptureOut,
    CloseAllOut,
    CloseOut,
    MessagesIn,
    NoDreamOut,
    ToolCallIn,
)
from somnid.sessions.records import MAX_ID_CHARS, Message, ToolCall

router = APIRouter(prefix="/v1/sessions", tags=["capture"])

SessionId = Annotated[str, Path(alias="sessionId", min_length=1, max_length=MAX_ID_CHARS)]


@router.post("/close-all", name="closeAllSessions", response_model=CloseAllOut)
async def close_all(runtime: RuntimeDep) -> CloseAllOut:
    """Close every open session log (each is finalised and stays pending for a dream)."""
    closed = await runtime.sessions.close_all()
    return CloseAllOut(closed=len(closed), paths=[str(item.path) for item in closed])


@router.post("/{sessionId}/messages", name="appendSessionMessages", response_model=CaptureOut)
async def append_messages(
    session_id: SessionId, body: MessagesIn, runtime: RuntimeDep
) -> CaptureOut:
    """Append messages to the session's log, in order; on disk before this answers."""
    messages = [
        Message(
            m.role,
            m.text,
            speaker=m.speaker,
            user_id=m.user_id,
            chat_type=m.chat_type,
            timestamp=m.moment(),
            id=m.id,
        )
        for m in body.messages
    ]
    appended = await runtime.sessions.append_messages(session_id, messages)
    return CaptureOut.of(session_id, appended)


@router.post("/{sessionId}/tool-calls", name="appendSessionToolCall", response_model=CaptureOut)
async def append_tool_call(
    session_id: SessionId, body: ToolCallIn, runtime: RuntimeDep
) -> CaptureOut:
    """Append one tool call (its call, a short result or error, and why it was made)."""
    tool = ToolCall(
        body.call,
        body.result,
        error=body.error,
        reason=body.reason,
        timestamp=body.moment(),
        id=body.id,
    )
    appended = await runtime.sessions.append_tool(session_id, tool)
    return CaptureOut.of(session_id, appended)


@router.post("/{sessionId}/close", name="closeSession", response_model=CloseOut)
async def close(session_id: SessionId, runtime: RuntimeDep) -> CloseOut:
    """Finalise the session's log (end time, message count); the next message opens a new
    one. A session with no open log answers ``path: null``."""
    return CloseOut.of(session_id, await runtime.sessions.close(session_id))


@router.post("/{sessionId}/no-dream", name="setSessionNoDream", response_model=NoDreamOut)
async def no_dream(session_id: SessionId, runtime: RuntimeDep) -> NoDreamOut:
    """Never dream this session: its pending logs, closed and open, get ``dream: false`` in
    their front-matter, and so does every log or part it opens from now on (somnid reads the
    flag back from the pending logs when it starts, so it survives a restart). A dream archives
    such logs unread. Idempotent."""
    return NoDreamOut.of(session_id, await runtime.sessions.mark_no_dream(session_id))
