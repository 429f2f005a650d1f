"""Logging for the daemon: readable lines on a terminal, JSON lines otherwise.

A JSON line carries ``ts``, ``level``, ``logger``, ``msg``, the ``request_id`` of the request
being served (if any), every field passed as ``extra=``, and ``exc`` for a traceback; one
record is always one line, tracebacks included. When stderr is the systemd journal's stream
(``JOURNAL_STREAM`` names it), each line starts with its syslog priority (``<6>`` for info,
``<4>`` for warning, ...): journald strips the prefix and files the entry under that priority,
so ``journalctl -p warning`` works and the message stays plain JSON.

No line holds a secret: the daemon's token (handed to the handler's formatter by
:func:`redact_secret`), a bearer credential, a query parameter that names one
(``access_token=``, ``access%5Ftoken=``, ``key=``...) and every other shape
:mod:`somnid.memory.scrub` knows is written as ``[REDACTED]``, whoever logged it (somnid,
uvicorn's websocket lines, a library's traceback). The message, each ``extra=`` field (a
field named like a secret goes whole) and the traceback are redacted before the line is
serialised, so a JSON line stays JSON. Warnings and errors that repeat are rate limited
per message: a flood (a thousand broken connections a second) costs a few lines, and the
next one let through says how many were left out.

Nothing here runs at import; only ``somnid serve`` calls :func:`configure`.
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import os
import sys
import threading
import time
from typing import Any, Literal, TextIO

from somnid.memory.scrub import redact_fields, scrub

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


def redact_secret(value: str) -> None:
    """Never write ``value`` (the daemon's token) in a log line from now on: the handlers
    :func:`configure` set up keep it (no module of ours holds it)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler.formatter, Redacting):
            handler.formatter.remember(value)


class Redacting(logging.Formatter):
    """Another formatter, given a copy of each record with its secrets replaced: the
    message, the ``extra=`` fields and the traceback, before the line is serialised."""

    def __init__(self, inner: logging.Formatter, known: set[str] | None = None) -> None:
        super().__init__()
        self.inner = inner
        self.known: set[str] = set() if known is None else known

    def remember(self, secret: str) -> None:
        if len(secret) >= 8:
            self.known.add(secret)

    def format(self, record: logging.LogRecord) -> str:
        return self.inner.format(self.redacted(record))

    def redacted(self, record: logging.LogRecord) -> logging.LogRecord:
        known = tuple(self.known)
        copy = logging.makeLogRecord(vars(record))
        copy.msg, copy.args = scrub(record.getMessage(), known=known), None
        for key, value in redact_fields(extra_fields(record), known).items():
            setattr(copy, key, value)
        if record.exc_info:
            copy.exc_text = scrub(self.formatException(record.exc_info), known=known)
            copy.exc_info = None
        elif record.exc_text:
            copy.exc_text = scrub(record.exc_text, known=known)
        if record.stack_info:
            copy.stack_info = scrub(record.stack_info, known=known)
        return copy


class RateLimit(logging.Filter):
    """At most ``burst`` warnings or errors per message template every ``period`` seconds;
    the first one let through after a pause says how many were dropped meanwhile."""

    def __init__(self, burst: int = 20, period: float = 10.0) -> None:
        super().__init__()
        self.burst = burst
        self.period = period
        self._windows: dict[tuple[str, str], list[float]] = {}  # key -> [start, sent, dropped]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg))
        now = time.monotonic()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.period:
                dropped = int(window[2]) if window is not None else 0
                self._windows[key] = [now, 1, 0]
                if len(self._windows) > 1000:  # forget the oldest templates
                    for stale in list(self._windows)[:500]:
                        del self._windows[stale]
                if dropped:
                    record.msg = f"{record.msg} ({dropped} similar lines left out)"
                return True
            if window[1] < self.burst:
                window[1] += 1
                return True
            window[2] += 1
            return False


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
        # One record, one line: a newline in a message (a model's error text, a name) made
        # lines that read as somnid's own, and an escape sequence could rewrite a terminal.
        line = super().formatMessage(record).translate(_CONTROLS)
        rid = request_id.get()
        return line if rid is None else f"{line} [{rid}]"

    def format(self, record: logging.LogRecord) -> str:
        # A traceback is lines by nature; each is indented, so none (an exception's message
        # holding a model's text) reads as a record of its own. The redacting layer hands
        # over its text already made (``exc_text``, no ``exc_info``).
        if record.exc_info is None and (record.exc_text or record.stack_info):
            record = logging.makeLogRecord(vars(record))
            record.exc_text = _indented(record.exc_text) if record.exc_text else None
            record.stack_info = _indented(record.stack_info) if record.stack_info else None
        return super().format(record)

    def formatException(self, ei: Any) -> str:
        return _indented(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return _indented(super().formatStack(stack_info))


def _indented(text: str) -> str:
    return "\n".join(f"  {line.translate(_CONTROLS)}" for line in text.splitlines())


_CONTROLS = {
    code: {"\n": "\\n", "\r": "\\r"}.get(chr(code), f"\\x{code:02x}")
    for code in [*range(0x20), 0x7F]
    if chr(code) != "\t"
}


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


CHATTY_LOGGERS = ("mcp.server.streamable_http", "apscheduler.scheduler", "apscheduler.executors")
"""Loggers that say at info what is no news: the MCP SDK every stateless request
("Terminating session: None"), APScheduler every run of a timer (two lines every 15 s,
about 11,500 a day in the journal)."""


class LibraryChatter(logging.Filter):
    """Drops what a library logs at info through the root logger: onnxruntime's quantizer
    said "Ignore MatMul due to non constant B" 24 times as the model was converted."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (
            record.name == "root"
            and record.levelno <= logging.INFO
            and "onnxruntime" in record.pathname
        )


def configure(level: str, fmt: LogFormat = "auto", stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` and above to ``stream`` (stderr) in ``fmt``."""
    out = stream if stream is not None else sys.stderr
    handler = logging.StreamHandler(out)
    handler.setFormatter(Redacting(build_formatter(fmt, out)))
    handler.addFilter(RateLimit())
    if level != "debug":
        handler.addFilter(LibraryChatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
