"""Log formats: JSON lines off a terminal, text on one, syslog priorities for journald."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

from somnid import logs
from somnid.config import Settings


def record(level: int, msg: str, *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("somnid.test", level, __file__, 1, msg, args, None)
    made.__dict__.update(extra)
    return made


def in_request(rid: str, formatter: logging.Formatter, item: logging.LogRecord) -> str:
    """Format as if serving request ``rid`` (in a context of its own, as a request is)."""

    def run() -> str:
        logs.request_id.set(rid)
        return formatter.format(item)

    return contextvars.copy_context().run(run)


@pytest.fixture
def root() -> Iterator[logging.Logger]:
    """The root logger, restored after the test reconfigured it."""
    logger = logging.getLogger()
    handlers, level = list(logger.handlers), logger.level
    try:
        yield logger
    finally:
        logger.handlers[:] = handlers
        logger.setLevel(level)


def test_a_json_line_has_the_fields_the_request_and_the_extras() -> None:
    formatter = logs.JsonFormatter()
    line = in_request("rq-1", formatter, record(logging.INFO, "GET %s", "/x", status=200))
    payload = json.loads(line)
    assert set(payload) == {"ts", "level", "logger", "msg", "request_id", "status"}
    assert payload["msg"] == "GET /x" and payload["level"] == "info"
    assert payload["logger"] == "somnid.test" and payload["request_id"] == "rq-1"
    assert payload["status"] == 200 and payload["ts"].endswith("+00:00")
    assert "request_id" not in json.loads(formatter.format(record(logging.INFO, "idle")))


def test_a_traceback_stays_on_one_line() -> None:
    try:
        raise ValueError("deep\ninside")
    except ValueError:
        item = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", None, None)
        item.exc_info = sys.exc_info()
    line = logs.JsonFormatter().format(item)
    assert "\n" not in line
    assert "ValueError: deep\ninside" in json.loads(line)["exc"]


def test_text_lines_name_the_request() -> None:
    line = in_request("rq-2", logs.TextFormatter(), record(logging.WARNING, "slow"))
    assert line.endswith("WARNING somnid.test: slow [rq-2]")
    assert logs.TextFormatter().format(record(logging.WARNING, "slow")).endswith(": slow")


def test_a_text_record_is_one_line_whatever_its_message_holds() -> None:
    # A probe: a model's error text with newlines made log lines that read as somnid's.
    said = "refused: x\n2026-12-07 INFO somnid: all fine\r\x1b[2Jgone"
    line = logs.TextFormatter().format(record(logging.WARNING, said))
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert line.endswith("refused: x\\n2026-12-07 INFO somnid: all fine\\r\\x1b[2Jgone")
    tab = logs.TextFormatter().format(record(logging.WARNING, "a\tb"))
    assert tab.endswith(": a\tb")
    try:
        raise ValueError("model said\n2026-12-07 INFO somnid: all fine")
    except ValueError:
        failed = record(logging.ERROR, "dream failed")
        failed.exc_info = sys.exc_info()
    # As the daemon writes it: through the redacting layer (a review: its own traceback
    # text reached the log unindented), under journald too.
    for formatter in (logs.TextFormatter(), logs.Redacting(logs.TextFormatter()),
                      logs.Redacting(logs.JournalPrefix(logs.TextFormatter()))):  # fmt: skip
        first, *rest = formatter.format(failed).split("\n")
        assert first.endswith("dream failed") and rest, formatter
        assert all(line.startswith("  ") for line in rest), rest


def test_auto_is_text_on_a_terminal_and_json_elsewhere(tmp_path: Path) -> None:
    leader, follower = os.openpty()
    with (
        os.fdopen(follower, "w") as terminal,
        os.fdopen(leader, "rb"),
        (tmp_path / "log").open("w") as file,
    ):
        assert isinstance(logs.build_formatter("auto", terminal), logs.TextFormatter)
        assert isinstance(logs.build_formatter("json", terminal), logs.JsonFormatter)
        assert isinstance(logs.build_formatter("auto", file), logs.JsonFormatter)
        assert isinstance(logs.build_formatter("text", file), logs.TextFormatter)


def journal_id(stream: TextIO) -> str:
    stat = os.fstat(stream.fileno())
    return f"{stat.st_dev}:{stat.st_ino}"


def test_journald_gets_syslog_priorities(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with (tmp_path / "journal").open("w") as journal, (tmp_path / "other").open("w") as other:
        monkeypatch.setenv("JOURNAL_STREAM", journal_id(journal))
        formatter = logs.build_formatter("auto", journal)
        prefixes = {
            level: formatter.format(record(level, "m"))[:3]
            for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, 50)
        }
        assert prefixes == {10: "<7>", 20: "<6>", 30: "<4>", 40: "<3>", 50: "<2>"}
        assert json.loads(formatter.format(record(logging.INFO, "m"))[3:])["msg"] == "m"
        # a child whose stderr went elsewhere inherits the variable, not the journal
        assert logs.build_formatter("auto", other).format(record(logging.INFO, "m"))[0] == "{"


def test_configure_sends_the_level_and_above(root: logging.Logger) -> None:
    stream = io.StringIO()
    logs.configure("warning", "json", stream)
    logging.getLogger("somnid.x").info("dropped")
    logging.getLogger("somnid.x").warning("kept %d", 1)
    assert [json.loads(line)["msg"] for line in stream.getvalue().splitlines()] == ["kept 1"]


def test_log_format_is_a_setting(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).log_format == "auto"
    assert Settings(data_dir=tmp_path, log_format="json").log_format == "json"
    with pytest.raises(ValueError, match="log_format"):
        Settings(data_dir=tmp_path, log_format="xml")
