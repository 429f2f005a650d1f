"""The dream journal: one Markdown file per dream in ``memory/dream-log/``, written by somnid
itself from what the dream actually did — even when the model forgot to write notes, and
even when the dream was interrupted.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from somnid.dream.result import DreamResult
from somnid.errors import BrokenFile
from somnid.store import frontmatter
from somnid.store.atomic import write_atomic
from somnid.store.layout import JOURNAL_NAME, Layout, journal_file_name


@dataclass(slots=True)
class JournalEntry:
    trigger: str
    status: str
    started: dt.datetime
    finished: dt.datetime
    processed_logs: list[str] = field(default_factory=list)
    skipped_logs: list[str] = field(default_factory=list)
    """Logs marked ``dream: false``, archived unread."""
    passed_by: list[str] = field(default_factory=list)
    """Pending logs passed by until they change, as ``<stem>: <why>``."""
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    profiles: list[str] = field(default_factory=list)
    refused_profiles: list[str] = field(default_factory=list)
    """Profile lines the identity gate refused (to review)."""
    decayed: int = 0
    retired: list[str] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)
    iterations: int = 0
    tool_calls: int = 0
    mode: str = ""
    llm_calls: int = 0
    stages: int = 0
    candidates: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    pending_after: int = 0
    reason: str = ""
    notes: str = ""
    summary: str = ""


def next_journal_path(layout: Layout, day: dt.date) -> Path:
    """``<day>_dream_<NNN>.md`` with NNN one past the highest used that day (deleting a
    journal never makes the next one overwrite another)."""
    folder = layout.dream_log_dir
    highest = 0
    if folder.is_dir():
        for path in folder.iterdir():
            match = JOURNAL_NAME.match(path.name)
            if match and match.group(1) == day.isoformat():
                highest = max(highest, int(match.group(2)))
    return folder / journal_file_name(day, highest + 1, layout.machine)


def _section(title: str, items: list[str]) -> str:
    body = "\n".join(f"- {item}" for item in items) if items else "- none"
    return f"## {title}\n{body}\n"


def write_journal(layout: Layout, entry: JournalEntry) -> Path:
    path = next_journal_path(layout, entry.started.date())
    meta: dict[str, Any] = {
        "dream_id": path.stem,
        "trigger": entry.trigger,
        "status": entry.status,
        "start_time": entry.started,
        "end_time": entry.finished,
        "mode": entry.mode,
        "processed_logs": list(entry.processed_logs),
        "pending_after": entry.pending_after,
        "llm_calls": entry.llm_calls,
        "iterations": entry.iterations,
        "tool_calls": entry.tool_calls,
        "stages": entry.stages,
        "candidates": dict(entry.candidates),
        "tokens": dict(entry.tokens),
        "seconds": entry.seconds,
    }
    if entry.skipped_logs:
        meta["skipped_logs"] = list(entry.skipped_logs)
    if entry.reason:
        meta["reason"] = entry.reason
    parts = [
        _section("Created", entry.created),
        _section("Updated", entry.updated),
        _section("Archived", entry.archived),
        _section("Profiles", entry.profiles),
        *(
            [_section("Refused profile lines", entry.refused_profiles)]
            if entry.refused_profiles
            else []
        ),
        f"## Decay\n- {entry.decayed} entries decayed; retired: "
        f"{', '.join(entry.retired) if entry.retired else 'none'}\n",
    ]
    if entry.skipped_logs:
        parts.append(_section("Skipped: never dream these (archived unread)", entry.skipped_logs))
    if entry.passed_by:
        title = "Passed by until they change (fix or edit the file to have it dreamed)"
        parts.append(_section(title, entry.passed_by))
    if entry.notes.strip():
        parts.append("## The dreamer's notes\n" + entry.notes.strip() + "\n")
    if entry.summary.strip():
        parts.append("## Summary\n" + entry.summary.strip() + "\n")
    document = frontmatter.Document(frontmatter.new_meta(meta), "\n".join(parts))
    data = frontmatter.render(document).encode("utf-8")
    write_atomic(path, data, exclusive=True, within=layout.memory_dir)
    return path


def processed_logs_of(layout: Layout, dream_id: str) -> list[str]:
    """The logs the dream ``dream_id`` marked processed, from its journal ([] when the
    journal is gone or unreadable: then nothing is known to reopen)."""
    found = JOURNAL_NAME.match(f"{dream_id}.md")
    if found is None:
        return []
    if found["machine"] and found["machine"] != layout.machine:
        return []  # another machine's dream (synced here): its logs are not ours to reopen
    try:
        doc = frontmatter.parse((layout.dream_log_dir / f"{dream_id}.md").read_text("utf-8"))
    except (OSError, UnicodeDecodeError, BrokenFile):
        return []
    logs = doc.meta.get("processed_logs") or []
    return [str(stem) for stem in logs if isinstance(stem, str)] if isinstance(logs, list) else []


def reopenable_logs_of(layout: Layout, dream_id: str) -> list[str]:
    """The logs of :func:`processed_logs_of` that no later dream of this machine marked
    processed again: reverting a dream twice (one that wrote no memory is let through)
    reopened logs a later dream had since consolidated, and the next read them once more
    (a probe)."""
    stems = processed_logs_of(layout, dream_id)
    found = JOURNAL_NAME.match(f"{dream_id}.md")
    if not stems or found is None or not layout.dream_log_dir.is_dir():
        return stems
    mine = _order(found)
    claimed: set[str] = set()
    for path in layout.dream_log_dir.iterdir():
        other = JOURNAL_NAME.match(path.name)
        if other is None or other["machine"] != found["machine"] or _order(other) <= mine:
            continue
        claimed.update(processed_logs_of(layout, path.name.removesuffix(".md")))
    return [stem for stem in stems if stem not in claimed]


def _order(name: re.Match[str]) -> tuple[str, int]:
    return name["day"], int(name["number"])


def latest_journal(layout: Layout) -> str | None:
    folder = layout.dream_log_dir
    if not folder.is_dir():
        return None
    named = (path for path in folder.iterdir() if JOURNAL_NAME.match(path.name))
    names = sorted(named, key=lambda path: path.name)
    if not names:
        return None
    try:
        return names[-1].read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _count(body: str, title: str) -> int:
    """The items of a ``## <title>`` section of a journal body ("- none" counts 0)."""
    match = re.search(rf"^## {re.escape(title)}\n((?:- .*\n?)*)", body, re.MULTILINE)
    if not match:
        return 0
    items = [line for line in match.group(1).splitlines() if line.startswith("- ")]
    return 0 if items == ["- none"] else len(items)


def _ints(value: Any) -> dict[str, int]:
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, int) and not isinstance(v, bool)}


def last_result(layout: Layout) -> DreamResult | None:
    """The last dream as its journal tells it (after a restart somnid has no other memory of
    it); None when there is no journal or it cannot be read."""
    text = latest_journal(layout)
    if text is None:
        return None
    try:
        doc = frontmatter.parse(text)
    except BrokenFile:
        return None
    meta, body = doc.meta, doc.body

    def when(key: str) -> str | None:
        value = meta.get(key)
        if isinstance(value, dt.datetime | dt.date):
            return value.isoformat()
        return str(value) if value else None

    def number(key: str) -> int:
        value = meta.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    processed = meta.get("processed_logs")
    skipped = meta.get("skipped_logs")
    seconds = meta.get("seconds")
    retired = re.search(r"retired: (.*)$", body, re.MULTILINE)
    decayed = re.search(r"^- (\d+) entries decayed", body, re.MULTILINE)
    return DreamResult(
        status=str(meta.get("status", "")),
        reason=str(meta.get("reason", "")),
        trigger=str(meta.get("trigger", "")),
        mode=str(meta.get("mode", "")),
        started=when("start_time"),
        finished=when("end_time"),
        seconds=float(seconds) if isinstance(seconds, int | float) else 0.0,
        logs=[str(x) for x in processed] if isinstance(processed, list) else [],
        processed=[str(x) for x in processed] if isinstance(processed, list) else [],
        skipped_logs=[str(x) for x in skipped] if isinstance(skipped, list) else [],
        pending_after=number("pending_after"),
        created=_count(body, "Created"),
        updated=_count(body, "Updated"),
        archived=_count(body, "Archived"),
        decayed=int(decayed.group(1)) if decayed else 0,
        retired=len(retired.group(1).split(", ")) if retired and retired.group(1) != "none" else 0,
        tokens=_ints(meta.get("tokens")),
        llm_calls=number("llm_calls"),
        tool_calls=number("tool_calls"),
        stages=number("stages"),
        iterations=number("iterations"),
        candidates=_ints(meta.get("candidates")),
        journal=str(layout.relative(layout.dream_log_dir / f"{meta.get('dream_id', '')}.md")),
    )
