"""Log redaction replaces credentials, not the words around them, and redacts a record's
fields before they are serialised: a JSON line stays JSON."""

from __future__ import annotations

import json
import logging

from somnid.logs import JsonFormatter, Redacting, TextFormatter
from somnid.memory.scrub import MARK, scrub

SECRET = "s0mn1d-" + "x" * 30


def _record(msg: str, *args: object, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("uvicorn.error", logging.INFO, __file__, 1, msg, args, None)
    for key, value in extra.items():
        setattr(record, key, value)
    return record


def test_a_bearer_credential_is_redacted_and_the_word_token_is_not() -> None:
    assert scrub("generated a bearer token into /data/token") == (
        "generated a bearer token into /data/token"
    )
    assert scrub(f"Authorization: Bearer {SECRET}") == f"Authorization: Bearer {MARK}"
    assert SECRET not in scrub(f"GET /v1/bridge?access_token={SECRET} 101")


def test_a_query_token_in_a_quoted_message_leaves_valid_json() -> None:
    # uvicorn's websocket line quotes the path: the old pattern ate the escaped quote.
    formatter = Redacting(JsonFormatter())
    for key in ("access_token", "access%5Ftoken", "access%5ftoken"):
        record = _record(
            '%s - "WebSocket %s" [accepted]', "127.0.0.1:5555", f"/v1/llm/bridge?{key}={SECRET}"
        )
        line = formatter.format(record)
        payload = json.loads(line)  # valid JSON
        assert SECRET not in line
        assert payload["msg"] == (
            f'127.0.0.1:5555 - "WebSocket /v1/llm/bridge?{key}={MARK}" [accepted]'
        )


def test_fields_named_like_secrets_and_secrets_in_fields_are_redacted() -> None:
    formatter = Redacting(JsonFormatter())
    record = _record(
        "GET %s", "/x", path=f"/x?token={SECRET}", password="hunter2", status=200, note=None
    )
    payload = json.loads(formatter.format(record))
    assert payload["password"] == MARK
    assert payload["path"] == f"/x?token={MARK}"
    assert payload["status"] == 200 and payload["note"] is None


def test_the_daemons_token_is_redacted_once_remembered_and_tracebacks_too() -> None:
    token = "a" * 4 + "Zq9" + "b" * 20  # no shape of its own: only remembering hides it
    formatter = Redacting(TextFormatter())
    assert token in formatter.format(_record("token %s", token))
    formatter.remember(token)
    assert token not in formatter.format(_record("token %s", token))
    try:
        raise RuntimeError(f"failed with {token}")
    except RuntimeError:
        import sys

        record = _record("boom")
        record.exc_info = sys.exc_info()
    text = formatter.format(record)
    assert "RuntimeError" in text and token not in text
    assert record.exc_info is not None  # the original record is left as it was


def test_libraries_say_no_news_at_info() -> None:
    """An ops probe: APScheduler logged two lines per timer run (11,500 a day in the
    journal) and onnxruntime's quantizer 24 "Ignore MatMul" lines at the first start."""
    import io
    import logging

    from somnid.logs import configure

    root = logging.getLogger()
    saved = root.handlers[:], root.level
    out = io.StringIO()
    try:
        configure("info", "text", stream=out)
        logging.getLogger("apscheduler.executors.default").info("Running job 'tick'")
        logging.getLogger("apscheduler.scheduler").info("Added job 'tick'")
        logging.getLogger("apscheduler.executors.default").warning("Run time of job missed")
        root.handle(
            logging.LogRecord(
                "root", logging.INFO, "/x/onnxruntime/quantization/operators/matmul.py", 36,
                "Ignore MatMul due to non constant B", None, None,
            )
        )  # fmt: skip
        logging.getLogger("somnid.runtime").info("somnid is ready")
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    said = out.getvalue()
    assert "Run time of job missed" in said and "somnid is ready" in said
    assert "Running job" not in said and "Added job" not in said and "MatMul" not in said
