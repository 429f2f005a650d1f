"""The session-log format, written and read back: file names, entry blocks, turns.

A log is Markdown with a YAML front-matter, one block per entry, blocks separated by a
blank line::

    [user] 2026-10-03T12:00:00+00:00          [user:Alice] … when a speaker is named
    the message text, as many lines as it has

    [agent] 2026-10-03T12:00:04+00:00
    the answer

    [tool] 2026-10-03T12:00:09+00:00
    reason: why the agent called it            (optional)
    call: search(query="deploy")
    result: 3 matches ⏎ deploy-window …        (or error: …)
    <!-- id: e:42 -->                          (the client's line id, when it sent one)

A text line that would read as a block header, or as an id line, is written with one more
leading backslash (``\\[user] …``) and read back without it, so a message can never forge a
turn or an id. Inside a tool field a newline is shown as `` ⏎ ``. The id line is an HTML
comment (Markdown viewers hide it); readers keep it out of the turn's text and hand it over
as :attr:`Turn.line_id`. The original plugin's logs (naive local times, no escaping, no
ids) read the same way.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import unicodedata
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from somnid.errors import BrokenFile, StorageError
from somnid.memory.clock import to_datetime
from somnid.sessions.read_cache import ReadCache
from somnid.sessions.records import wants_dream
from somnid.store import frontmatter
from somnid.store.layout import Layout
from somnid.store.safe import read_text

LOG_NAME = re.compile(
    r"^(?P<day>\d{4}-\d{2}-\d{2})_(?P<number>\d{3,})(?:-(?P<machine>[0-9a-f]{6}))?\.md$"
)
"""``2026-12-02_001.md``; synced (store/layout's ``Layout.machine``), with the machine's
id: ``2026-12-02_001-3fa9c2.md``, so an episode's ``source`` names one log everywhere."""
NEWLINE_MARK = " ⏎ "
TOOL_FIELD_CHARS = 300
"""``result`` and ``error`` of a tool call are cut here: the dreamer needs the gist only."""
MAX_READ_BYTES = 8 * 1024 * 1024

_HEADER = re.compile(r"^\[(?P<tag>[^\[\]\n]+)\] (?P<ts>\S+)[ \t]*$")
_ESCAPED_HEADER = re.compile(r"^\\+\[[^\[\]\n]+\] \S+[ \t]*$")
_ID_LINE = re.compile(r"^<!-- id: (?P<id>\S+) -->$")
_ESCAPED_ID_LINE = re.compile(r"^\\+<!-- id: \S+ -->$")
_TOOL_FIELDS = ("reason", "call", "result", "error")
_DROPPED_CONTROLS = {code: None for code in range(32) if chr(code) not in "\t\n"} | {0x7F: None}


# ---------------------------------------------------------------------- file names


@dataclass(frozen=True, slots=True)
class LogFile:
    """A session log on disk, named ``<YYYY-MM-DD>_<NNN>.md``."""

    path: Path
    day: str
    number: int
    archived: bool

    @property
    def stem(self) -> str:
        return self.path.stem


def log_name(day: dt.date, number: int, machine: str | None = None) -> str:
    return f"{day.isoformat()}_{number:03d}{f'-{machine}' if machine else ''}.md"


def list_logs(layout: Layout, *, live: bool = True, archived: bool = True) -> list[LogFile]:
    """Well-named logs, oldest first (by day, then number; live before archived on a tie)."""
    found: list[LogFile] = []
    folders = [(layout.session_log_dir, False)] if live else []
    if archived:
        folders.append((layout.session_log_archive, True))
    for folder, is_archived in folders:
        for path in _md_files(folder):
            match = LOG_NAME.match(path.name)
            if match:
                found.append(LogFile(path, match["day"], int(match["number"]), is_archived))
    found.sort(key=lambda log: (log.day, log.number, log.archived))
    return found


def highest_number(layout: Layout, day: dt.date) -> int:
    """The highest NNN used on ``day`` by a live or an archived log (0 if none); by the
    names alone (a path made for each of 3,000 logs took 110 ms a new log)."""
    prefix = day.isoformat()
    highest = 0
    for folder in (layout.session_log_dir, layout.session_log_archive):
        try:
            names = os.listdir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError:  # a log's number is not known without it: nothing is written
            raise StorageError(f"{folder} is a folder somnid may not read (chmod u+rwx)") from None
        for name in names:
            match = LOG_NAME.match(name) if name.startswith(prefix) else None
            if match is not None and match["day"] == prefix:
                highest = max(highest, int(match["number"]))
    return highest


def _md_files(folder: Path) -> Iterator[Path]:
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return
    except PermissionError:  # a log's number is not known without it: nothing is written
        raise StorageError(f"{folder} is a folder somnid may not read (chmod u+rwx)") from None
    for entry in entries:
        name = entry.name
        if (
            name.endswith(".md")
            and not name.startswith(".")
            and entry.is_file(follow_symlinks=False)
        ):
            yield Path(entry.path)


def archived_files(layout: Layout) -> list[Path]:
    """Every ``*.md`` directly in ``session-log/archived/`` (any name), in no order."""
    return list(_md_files(layout.session_log_archive))


def live_files(layout: Layout) -> list[Path]:
    """Every ``*.md`` directly in ``session-log/`` (odd names too: the original treated any
    such file as a log), oldest first."""
    return sorted(_md_files(layout.session_log_dir), key=_order_key)


def _order_key(path: Path) -> tuple[str, int, str]:
    match = LOG_NAME.match(path.name)
    if match:
        return match["day"], int(match["number"]), path.name
    return path.stem, -1, path.name


# ---------------------------------------------------------------------- writing


def clean_text(text: str) -> str:
    """Newlines normalised, control characters (but tab and newline) dropped, trimmed."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.translate(_DROPPED_CONTROLS).strip()


def cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` at most ``limit`` characters, with a visible marker when it was cut."""
    if len(text) <= limit:
        return text, False
    return f"{text[:limit].rstrip()} …(truncated, {len(text)} chars)", True


def speaker_tag(speaker: str | None) -> str:
    """A speaker as it can stand in a block header: one line, no brackets, ≤ 100 chars."""
    if not speaker:
        return ""
    tag = speaker.replace("[", "(").replace("]", ")")
    tag = " ".join("".join(ch if unicodedata.category(ch)[0] != "C" else " " for ch in tag).split())
    return tag[:100].strip()


def _stamp(when: dt.datetime) -> str:
    return when.isoformat(timespec="seconds")


def _escape_line(line: str) -> str:
    if any(rule.match(line) for rule in (_HEADER, _ESCAPED_HEADER, _ID_LINE, _ESCAPED_ID_LINE)):
        return "\\" + line
    return line


def _id_line(line_id: str | None) -> str:
    """The block's last line when it has an id: ``line_id`` is already in its written form
    (:func:`somnid.sessions.seen.written_id`: no spaces, no ``>``)."""
    if line_id is None:
        return ""
    if not _ID_LINE.match(f"<!-- id: {line_id} -->") or ">" in line_id:
        raise ValueError(f"not a written line id: {line_id!r}")
    return f"<!-- id: {line_id} -->\n"


def message_block(
    role: str,
    text: str,
    when: dt.datetime,
    speaker: str | None = None,
    *,
    line_id: str | None = None,
) -> str:
    """One message as a block; ``text`` is already cleaned and cut, and not empty."""
    tag = speaker_tag(speaker)
    header = f"[{role}:{tag}]" if tag else f"[{role}]"
    body = "\n".join(_escape_line(line) for line in text.split("\n"))
    return f"{header} {_stamp(when)}\n{body}\n{_id_line(line_id)}\n"


def _field(value: str, limit: int | None) -> str:
    flat = NEWLINE_MARK.join(clean_text(value).split("\n"))
    return cut(flat, limit)[0] if limit is not None else flat


def tool_block(
    call: str,
    result: str,
    when: dt.datetime,
    *,
    error: str | None = None,
    reason: str | None = None,
    limit: int,
    line_id: str | None = None,
) -> str:
    """One tool call as a block: ``reason`` and ``call`` cut at ``limit`` characters,
    ``result`` and ``error`` at :data:`TOOL_FIELD_CHARS`, each on one line (every line
    starts with its field's name, so none can pose as a header or an id line)."""
    lines = [f"[tool] {_stamp(when)}"]
    if reason and reason.strip():
        lines.append(f"reason: {_field(reason, limit)}")
    lines.append(f"call: {_field(call, limit)}")
    has_error = error is not None and bool(error.strip())
    if result.strip() or not has_error:
        lines.append(f"result: {_field(result, min(limit, TOOL_FIELD_CHARS))}")
    if error is not None and has_error:
        lines.append(f"error: {_field(error, min(limit, TOOL_FIELD_CHARS))}")
    return "\n".join(lines) + "\n" + _id_line(line_id) + "\n"


# ---------------------------------------------------------------------- reading


@dataclass(frozen=True, slots=True)
class ToolBlock:
    call: str
    result: str | None
    error: str | None
    reason: str | None


@dataclass(frozen=True, slots=True)
class Turn:
    """One block of a log. ``role`` is the tag before ``:`` (``user``, ``agent``, ``tool``,
    or whatever else a file holds); ``text`` is the block's text as written (for a tool
    call, its field lines); ``tool`` is set for ``[tool]`` blocks; ``log`` is the file stem;
    ``line_id`` is the client's id for the line as written (None in logs without ids);
    ``session`` is the client session whose log holds it (the log's ``chat_id``; the stem
    when the log names none): a session's parts are logs of their own."""

    role: str
    speaker: str | None
    timestamp: dt.datetime | None
    text: str
    tool: ToolBlock | None = None
    log: str = ""
    line_id: str | None = None
    session: str = ""


@dataclass(frozen=True, slots=True)
class Transcript:
    path: Path
    meta: dict[str, Any]
    turns: list[Turn]
    unreadable: bool = False
    """The body holds text, but no turn could be read from it (no turn header somnid
    knows: written or broken by hand)."""

    @property
    def chat_id(self) -> str | None:
        value = self.meta.get("chat_id")
        return None if value is None else str(value)


def parse_turns(body: str, tz: dt.tzinfo, *, log: str = "", session: str = "") -> list[Turn]:
    """The blocks of a log body, in file order. Text before the first header is ignored;
    blocks whose text is empty are dropped (as the original did); naive times get ``tz``.
    A block's id line is never part of its text (the last one counts)."""
    turns: list[Turn] = []
    header: re.Match[str] | None = None
    lines: list[str] = []
    line_id: str | None = None

    def flush() -> None:
        if header is None:
            return
        text = "\n".join(lines).strip()
        if not text:
            return
        role, _, speaker = header["tag"].partition(":")
        when = to_datetime(header["ts"], tz)
        tool = _tool_of(text) if role == "tool" else None
        turns.append(Turn(role, speaker or None, when, text, tool, log, line_id, session))

    for line in body.split("\n"):
        match = _HEADER.match(line)
        marked = None if match else _ID_LINE.match(line)
        if match:
            flush()
            header, lines, line_id = match, [], None
        elif marked:
            line_id = marked["id"]
        elif _ESCAPED_HEADER.match(line) or _ESCAPED_ID_LINE.match(line):
            lines.append(line[1:])
        else:
            lines.append(line)
    flush()
    return turns


def _tool_of(text: str) -> ToolBlock:
    fields: dict[str, str] = {}
    for line in text.split("\n"):
        key, sep, value = line.partition(": ")
        if not sep:
            key, sep, value = line.partition(":")
        if sep and key in _TOOL_FIELDS and key not in fields:
            fields[key] = value.replace(NEWLINE_MARK, "\n").strip()
    return ToolBlock(
        call=fields.get("call", ""),
        result=fields.get("result"),
        error=fields.get("error"),
        reason=fields.get("reason"),
    )


def read_log(path: Path, tz: dt.tzinfo, *, round_trip: bool = True) -> Transcript:
    """One log's front-matter and turns. A front-matter that cannot be read leaves the
    meta empty and the whole file as body. Raises OSError if the file cannot be read.
    ``round_trip=False``: the fast reader, whose times are plain datetimes (the writer's
    keep their spelling, which a dream's view of the log shows)."""
    try:  # only a regular file, never through a link: a FIFO would block the reader
        text = read_text(path.parent, path, MAX_READ_BYTES, errors="replace")
    except BrokenFile as exc:
        raise OSError(f"{path.name}: {exc.detail}") from None
    try:
        doc = frontmatter.parse(text, round_trip=round_trip)
        meta: dict[str, Any] = dict(doc.meta)
        body = doc.body
    except BrokenFile:
        meta, body = {}, text
    chat_id = meta.get("chat_id")
    session = path.stem if chat_id is None else str(chat_id)
    turns = parse_turns(body, tz, log=path.stem, session=session)
    return Transcript(path, meta, turns, unreadable=not turns and bool(body.strip()))


def file_mark(path: Path) -> tuple[int, int]:
    """What tells a log changed since it was read: (ctime_ns, size), ctime as an edit that
    puts the mtime back (``touch -r``) moves it too; (0, -1) once gone."""
    try:
        info = path.stat()
    except OSError:
        return 0, -1
    return info.st_ctime_ns, info.st_size


_READ: ReadCache[Transcript] = ReadCache()
"""The logs ``search_recent_conversation`` read (:mod:`.read_cache`)."""


def _readable(paths: Iterator[Path], tz: dt.tzinfo) -> Iterator[Transcript]:
    for path in paths:
        try:
            # Only turns and chat_id are read here: the fast reader.
            yield _READ.read(path, tz, functools.partial(read_log, path, tz, round_trip=False))
        except (OSError, UnicodeError):
            continue  # moved by a dream, or unreadable: not a conversation to show


def session_turns(
    layout: Layout, session_id: str, tz: dt.tzinfo, *, roles: Collection[str] | None = None
) -> list[Turn]:
    """Every turn the client session ``session_id`` (the logs' ``chat_id``) left, across its
    logs and their parts, live and archived, oldest first."""
    paths = (log.path for log in list_logs(layout))
    turns: list[Turn] = []
    for transcript in _readable(paths, tz):
        if transcript.chat_id == session_id:
            turns.extend(t for t in transcript.turns if roles is None or t.role in roles)
    return turns


def recent_turns(
    layout: Layout, tz: dt.tzinfo, *, limit: int, roles: Collection[str] | None = None
) -> list[Turn]:
    """The newest ``limit`` turns of all logs, live and archived, newest first. Files are
    read newest first and reading stops once ``limit`` turns are found."""
    if limit <= 0:
        return []
    paths = (log.path for log in reversed(list_logs(layout)))
    found: list[Turn] = []
    for transcript in _readable(paths, tz):
        for turn in reversed(transcript.turns):
            if roles is None or turn.role in roles:
                found.append(turn)
                if len(found) >= limit:
                    return found
    return found


def log_turns(
    path: Path,
    tz: dt.tzinfo,
    *,
    roles: Collection[str] | None = None,
    dreamable_only: bool = False,
) -> list[Turn]:
    """One log's turns with ``roles`` (all without), in order; none if it cannot be read
    (moved by a dream, or unreadable), nor, with ``dreamable_only``, if it is marked
    ``dream: false`` (its session was kept out of long-term memory on purpose)."""
    for transcript in _readable(iter([path]), tz):
        if dreamable_only and not wants_dream(transcript.meta):
            return []
        return [turn for turn in transcript.turns if roles is None or turn.role in roles]
    return []
