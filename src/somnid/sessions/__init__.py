"""Session capture: conversation logs written as they happen, read back as turns."""

from somnid.sessions.logs import SessionLogs
from somnid.sessions.records import Appended, Closed, Message, PendingLog, ToolCall
from somnid.sessions.service import SessionService
from somnid.sessions.transcript import Transcript, Turn, read_log, recent_turns, session_turns

__all__ = [
    "Appended",
    "Closed",
    "Message",
    "PendingLog",
    "SessionLogs",
    "SessionService",
    "ToolCall",
    "Transcript",
    "Turn",
    "read_log",
    "recent_turns",
    "session_turns",
]
