"""Logging for the daemon: readable lines on a terminal, JSON lines otherwise.

A JSON line carries ``ts``, ``level``, ``logger``, ``msg``, the ``request_id`` of the request
being served (if any), every field passed as ``extra=``, and ``exc`` for a traceback; one
record is always one line, tracebacks included. When stderr is the systemd journal's stream
(``JOURNAL_STREAM`` names it), each line starts with its syslog priority (``<6>`` for info,
``<4>`` for warning, ...): journald strips the prefix and files the entry under that priority,
so ``journalctl -p warning`` works and the message stays plain JSON.

No line holds a secret: the daemon's token (registered with :func:`redact_secret`), a
bearer credential, or the value of a query parameter that names one (``access_token=``,
``token=``, ``key=``...) is written as ``[redacted]``, whoever logged it (somnid, uvicorn's
websocket lines, a library's traceback). Warnings and errors that repeat are rate limited
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
import re
import sys
import threading
import time
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


_QUERY_SECRET = re.compile(
    r"(?i)((?<![\w-])(?:access_token|access-token|token|api_key|apikey|key|secret|password|passwd"
    r"|auth|authorization|sig|signature|code)=)[^&\s\"'#]*"
)
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{16,}")
_secrets: set[str] = set()
REDACTED = "[redacted]"


def redact_secret(value: str) -> None:
    """Never write ``value`` (the daemon's token) in a log line from now on."""
    if len(value) >= 8:
        _secrets.add(value)


def redact(text: str) -> str:
    """``text`` without a registered secret, a bearer credential or a query secret."""
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _QUERY_SECRET.sub(lambda m: m.group(1) + REDACTED, text)
    return _BEARER.sub(lambda m: m.group(1) + REDACTED, text)


class Redacting(logging.Formatter):
    """Another formatter's line, with secrets replaced (see :func:`redact`)."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


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
    handler.setFormatter(Redacting(build_formatter(fmt, out)))
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The MCP SDK logs every stateless request at info ("Terminating session: None").
    quiet = logging.DEBUG if level == "debug" else logging.WARNING
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(quiet)
