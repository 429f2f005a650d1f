"""Logging for the daemon: readable lines on a terminal, JSON lines otherwise.

A JSON line carries ``ts``, ``level``, ``logger``, ``msg``, the ``request_id`` of the request
being served (if any), every field passed as ``extra=``, and ``exc`` for a traceback; one
record is always one line, tracebacks included. When stderr is the systemd journal's stream
(``JOURNAL_STREAM`` names it), each line starts with its syslog priority (``<6>`` for info,
``<4>`` for warning, ...): journald strips the prefix and files the entry under that priority,
so ``journalctl -p warning`` works and the message stays plain JSON.

Nothing here runs at import; only ``somnid serve`` calls :func:`configure`.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import os
import sys
from typing import Any, Literal, TextIO

LogFormat = Literal["auto", "json", "text"]

request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "somnid_request_id", default=None
)
"""The id of the request being served; set by ``somnid.api.observe``, read by the formatters."""

# Attributes every record has (``taskName`` from Python 3.12 on); the rest came as ``extra=``,
# but for uvicorn's ``color_message`` (its message again, with terminal colours).
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "color_message",
}
# syslog priorities, highest level first: crit, err, warning, info; below info is debug (7).
_SYSLOG_PRIORITY = (
    (logging.CRITICAL, 2),
    (logging.ERROR, 3),
    (logging.WARNING, 4),
    (logging.INFO, 6),
)


def extra_fields(record: logging.LogRecord) -> dict[str, Any]:
    """What a call passed as ``extra=``: the record's attributes logging did not put there."""
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _RECORD_FIELDS and not key.startswith("_")
    }


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = request_id.get()
        if rid is not None:
            payload["request_id"] = rid
        for key, value in extra_fields(record).items():
            payload.setdefault(key, value)
        if record.exc_info:
            payload["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            payload["exc"] = record.exc_text
        if record.stack_info:
            payload["stack"] = self.formatStack(record.stack_info)
        return json.dumps(payload, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message [request id]``, then a traceback if there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        rid = request_id.get()
        return line if rid is None else f"{line} [{rid}]"


class JournalPrefix(logging.Formatter):
    """Prefix another formatter's output with the record's syslog priority (``<N>``)."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        priority = next((p for level, p in _SYSLOG_PRIORITY if record.levelno >= level), 7)
        return f"<{priority}>{self.inner.format(record)}"


def _is_journal(stream: TextIO) -> bool:
    """Whether ``stream`` is the journal stream systemd gave us (``JOURNAL_STREAM=dev:inode``);
    a child's stderr redirected elsewhere inherits the variable but not the stream."""
    expected = os.environ.get("JOURNAL_STREAM", "")
    if not expected:
        return False
    try:
        stat = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return False
    return expected == f"{stat.st_dev}:{stat.st_ino}"


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except ValueError:  # closed
        return False


def build_formatter(fmt: LogFormat, stream: TextIO) -> logging.Formatter:
    """``auto``: text on a terminal, JSON otherwise; either with priorities for journald."""
    use_json = fmt == "json" or (fmt == "auto" and not _is_tty(stream))
    formatter: logging.Formatter = JsonFormatter() if use_json else TextFormatter()
    return JournalPrefix(formatter) if _is_journal(stream) else formatter


CHATTY_LOGGERS = ("mcp.server.streamable_http",)


def configure(level: str, fmt: LogFormat = "auto", stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` and above to ``stream`` (stderr) in ``fmt``."""
    out = stream if stream is not None else sys.stderr
    handler = logging.StreamHandler(out)
    handler.setFormatter(build_formatter(fmt, out))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The MCP SDK logs every stateless request at info ("Terminating session: None").
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
