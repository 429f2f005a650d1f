"""Session logs and dream journals as a dream sees them: named by stem, never by path.

A model names a log (``2026-10-02_001``); somnid finds it among the pending logs it lists
itself, so no name can reach a file outside ``session-log/`` (the original read any path it
was given). Logs are shown in pages cut at entry boundaries, each entry quoted, so a long
log is read whole, in parts, and no message can pose as another turn. All functions here
block; the tools run them in a thread.
"""

from __future__ import annotations

import datetime as dt
import os
import unicodedata
from pathlib import Path

from somnid.errors import InvalidInput
from somnid.recall.assoc import estimate_tokens
from somnid.sessions.transcript import Transcript
from somnid.store.layout import JOURNAL_NAME, Layout

SUMMARY_KEYS = (
    "user",
    "chat_id",
    "chat_type",
    "start_time",
    "end_time",
    "message_count",
    "part",
    "continues",
    "continued_by",
    "total_message_count",
)


def log_stem(raw: str) -> str:
    """The stem a model gave for a log (``2026-10-02_001``, ``.md`` tolerated); anything
    that looks like a path is refused."""
    text = raw.strip()
    if text.endswith(".md"):
        text = text[:-3]
    if (
        not text
        or text in (".", "..")
        or text.startswith(".")
        or any(sep in text for sep in ("/", "\\", ":"))
        or any(unicodedata.category(ch)[0] == "C" for ch in text)
    ):
        raise InvalidInput(
            f"{raw[:80]!r} is not a log name: name a log by its file stem, such as "
            "2026-10-02_001, never by a path"
        )
    return text


def cut_tokens(text: str, budget: int) -> tuple[str, bool]:
    """``text`` cut to about ``budget`` tokens (estimated as recall does), and whether it was."""
    if estimate_tokens(text) <= budget:
        return text, False
    used = 0.0
    for index, ch in enumerate(text):
        used += 1.0 if "\u3400" <= ch <= "\u9fff" else 0.25
        if used > budget:
            return text[:index].rstrip(), True
    return text, False


# ---------------------------------------------------------------------- session logs


def _stamp(when: dt.datetime | None, tz: dt.tzinfo) -> str:
    return f" {when.astimezone(tz):%Y-%m-%d %H:%M:%S}" if when is not None else ""


def log_blocks(transcript: Transcript, tz: dt.tzinfo) -> list[str]:
    """One block per entry: its header, then its text quoted line by line."""
    blocks = []
    for turn in transcript.turns:
        tag = f"{turn.role}:{turn.speaker}" if turn.speaker else turn.role
        lines = [f"[{tag}]{_stamp(turn.timestamp, tz)}"]
        lines.extend(f"> {line}" if line else ">" for line in turn.text.split("\n"))
        blocks.append("\n".join(lines))
    return blocks


def paginate(blocks: list[str], budget: int) -> list[str]:
    """Blocks grouped into pages of about ``budget`` tokens, never splitting a block unless
    it alone is longer than a page (then it is cut, visibly)."""
    pages: list[str] = []
    current: list[str] = []
    used = 0
    for block in blocks:
        cost = estimate_tokens(block) + 1
        if cost > budget:
            block = cut_tokens(block, budget)[0] + "\n> …(entry cut: longer than a page)"
            cost = budget
        if current and used + cost > budget:
            pages.append("\n\n".join(current))
            current, used = [], 0
        current.append(block)
        used += cost
    if current:
        pages.append("\n\n".join(current))
    return pages or [""]


def log_summary(transcript: Transcript) -> str:
    """The front-matter facts a dream needs, on one line."""
    parts = []
    for key in SUMMARY_KEYS:
        value = transcript.meta.get(key)
        if value is not None and str(value).strip():
            parts.append(f"{key}: {value}")
    return " | ".join(parts) if parts else "(no front-matter)"


# ---------------------------------------------------------------------- dream journals


def journals(layout: Layout) -> list[Path]:
    """The dream journals, newest first (by day, then number: ``_010`` after ``_009``)."""
    found: list[tuple[str, int, Path]] = []
    try:
        entries = list(os.scandir(layout.dream_log_dir))
    except (FileNotFoundError, NotADirectoryError):
        return []
    for entry in entries:
        match = JOURNAL_NAME.match(entry.name)
        if match and entry.is_file(follow_symlinks=False):
            found.append((match["day"], int(match["number"]), Path(entry.path)))
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [path for _, _, path in found]


def read_head(path: Path, budget: int) -> tuple[str, bool]:
    """The start of a text file, about ``budget`` tokens of it, and whether it was cut."""
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        text = handle.read(budget * 4 + 1)  # enough for the budget, whatever the script
    return cut_tokens(text, budget)
