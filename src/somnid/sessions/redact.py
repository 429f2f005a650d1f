"""Scrubbing given text out of the session logs, live and archived: a purge asks for it, so
that what was forgotten in memory is not served back verbatim by
``search_recent_conversation``, ``/v1/recall``'s conversation lines or the next dream.

Each occurrence (case-insensitive) in a log's text, never in its front-matter, becomes
``[REDACTED]``; the file is rewritten atomically. A log a session still appends to is
rewritten under that session's lock and the writer then knows the new file as its own; a
closed or archived one under :data:`.archive.LOG_MOVES`, so no dream moves it meanwhile.
A log that cannot be read (broken by hand, not a regular file) is left as it is, and said.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from somnid.errors import BrokenFile, InvalidInput
from somnid.memory.scrub import MARK
from somnid.sessions import rewrite, transcript
from somnid.sessions.archive import LOG_MOVES
from somnid.sessions.logs import SessionLogs
from somnid.sessions.redact_match import matcher
from somnid.store.atomic import write_atomic

log = logging.getLogger(__name__)

MIN_CHARS = 4
"""A shorter phrase would blank common words all over the conversation."""
MAX_PHRASES = 2000
"""Lines to scrub at most (an entry's and the phrases given): one pattern of more is slow."""


@dataclass(frozen=True, slots=True)
class Scrubbed:
    path: PurePosixPath
    replaced: int


def phrases(texts: Iterable[str]) -> list[str]:
    """The phrases to scrub: each one's lines, stripped of Markdown list markers, of at
    least :data:`MIN_CHARS` characters; longest first (a phrase inside a longer one goes
    with it). 400 if there are too many."""
    found: dict[str, None] = {}
    for text in texts:
        for line in text.splitlines():
            phrase = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line).strip()
            if len(phrase) >= MIN_CHARS and phrase.casefold() != MARK.casefold():
                found[phrase] = None
    if len(found) > MAX_PHRASES:
        raise InvalidInput(f"at most {MAX_PHRASES} phrases can be scrubbed from the logs at once")
    return sorted(found, key=len, reverse=True)


def redact_text(text: str, wanted: list[str]) -> tuple[str, int]:
    """``text`` with every phrase of ``wanted`` in its turns replaced, wherever
    :mod:`.redact_match` finds it (as said, as tools write it, its start before a cut, in
    the bytes of another encoding); how many places were. The front-matter, a turn's
    header line and its id line stay as they are; a line that the replacement made look
    like one is escaped as the writer escapes it."""
    if not wanted:
        return text, 0
    found = matcher(tuple(wanted))
    head, body = _split(text)
    lines, total = body.split("\n"), 0
    for index, line in enumerate(lines):
        if transcript._HEADER.match(line) or transcript._ID_LINE.match(line):
            continue
        replaced, count = found.redact(line, MARK)
        if not count:
            continue
        escaped = transcript._ESCAPED_HEADER.match(line) or transcript._ESCAPED_ID_LINE.match(line)
        lines[index] = replaced if escaped else transcript._escape_line(replaced)
        total += count
    return head + "\n".join(lines), total


_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(?:.*?\r?\n)?---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


def _split(text: str) -> tuple[str, str]:
    """The front-matter (fences included) and the rest; no front-matter: ("", text)."""
    match = _FRONT.match(text)
    return (text[: match.end()], text[match.end() :]) if match else ("", text)


def redact_logs(logs: SessionLogs, wanted: list[str]) -> list[Scrubbed]:
    """Scrub ``wanted`` from every session log, open ones first; the logs changed. Blocking."""
    if not wanted:
        return []
    done: list[Scrubbed] = []
    with logs._registry:
        open_now = dict(logs._open)
    for path, session_id in open_now.items():
        with logs._session(session_id) as session:
            current = session.log
            if current is None or current.path != path:
                continue  # closed meanwhile: the pass below takes it
            count = _redact_file(logs, path, wanted)
            if count:
                current.own(path.stat())
                done.append(Scrubbed(logs.layout.relative(path), count))
    with LOG_MOVES:
        layout = logs.layout
        for path in [*transcript.live_files(layout), *transcript.archived_files(layout)]:
            if logs.is_open(path):
                continue  # opened after the pass above: it holds only new lines
            count = _redact_file(logs, path, wanted)
            if count:
                done.append(Scrubbed(layout.relative(path), count))
    return done


def _redact_file(logs: SessionLogs, path: Path, wanted: list[str]) -> int:
    try:
        # Bytes that are no UTF-8 (a log saved by hand in Latin-1) are kept as they are: read
        # strictly, the log was skipped and the purge said nothing of it (a probe), while
        # recall still served its lines.
        text = rewrite.read(logs.layout.root, path, errors="surrogateescape")
    except FileNotFoundError:
        return 0
    except (OSError, BrokenFile) as exc:
        log.warning("could not scrub session log %s: %s", path.name, exc)
        return 0
    changed, count = redact_text(text, wanted)
    if count:
        write_atomic(path, changed.encode("utf-8", "surrogateescape"), make_dirs=False)
    return count
