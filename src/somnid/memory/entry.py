"""What an entry is: one memory, one Markdown file with YAML front-matter.

Identity is ``(kind, name)`` for a live entry, where ``name`` is its folder (or, for user
profiles, the user id). An archived entry is ``(kind, name)`` with ``archived`` set, where
``name`` is its folder inside the archive (unique there, so nothing is ever overwritten).
Everything else about an entry lives in its file; the index only mirrors it.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from somnid.memory.clock import local_date
from somnid.memory.kinds import Kind
from somnid.memory.lifecycle import Vitals, initial_score


def bullet_field(body: str, key: str) -> str | None:
    """The original wrote some fields as body lines ``- key: value``; read the first one."""
    pattern = re.compile(rf"^\s*-\s*{re.escape(key)}\s*:\s*(.*?)\s*$", re.MULTILINE)
    match = pattern.search(body)
    return match.group(1) if match else None


@dataclass(slots=True)
class Entry:
    """One memory as read from disk."""

    kind: Kind
    name: str
    archived: bool
    meta: MutableMapping[str, Any]
    body: str
    path: PurePosixPath  # relative to the data dir
    etag: str
    mtime: float

    def field(self, key: str) -> Any:
        """A field from the front-matter, else from a legacy body bullet line, else None."""
        if key in self.meta and self.meta[key] is not None:
            return self.meta[key]
        return bullet_field(self.body, key)

    def text_field(self, key: str) -> str:
        value = self.field(key)
        return "" if value is None else str(value)

    @property
    def description(self) -> str:
        return self.text_field("description")

    @property
    def entry_type(self) -> str:
        return self.text_field("type")

    def vitals(self, tz: dt.tzinfo) -> Vitals:
        return vitals_from_meta(self.meta, tz)


def vitals_from_meta(meta: Mapping[str, Any], tz: dt.tzinfo) -> Vitals:
    """Score, stability and the days of last use and decay, tolerant of hand-written values."""
    return Vitals(
        score=_as_float(meta.get("score"), 0.5),
        stability=_as_int(meta.get("stability"), 0),
        last_used=local_date(meta.get("last_used"), tz),
        last_decay=local_date(meta.get("last_decay"), tz),
    )


def restored_meta(kind: Kind, meta: Mapping[str, Any], now: dt.datetime) -> dict[str, Any]:
    """What a restore sets: an intention is open again; a fading entry is at least where a
    new one of its kind starts and fades from now (a person brought it back: the next
    upkeep must not retire it again at once for the score it was retired with)."""
    if kind is Kind.INTENTION:
        return {"status": "open"}
    if not kind.decays:
        return {}
    salience = meta.get("salience") if kind is Kind.EPISODE else None
    start = initial_score(
        kind, verified=meta.get("verified") is not False, salience=str(salience or "") or None
    )
    return {"score": round(max(_as_float(meta.get("score"), start), start), 4), "last_decay": now}


def _as_float(value: object, default: float) -> float:
    """A finite number from a hand-written value (``.inf``, ``.nan``, ``1e999`` and text
    that is no number give ``default``)."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return default
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return default
    return number if math.isfinite(number) else default


def _as_int(value: object, default: int) -> int:
    number = _as_float(value, math.nan)  # an int past a float's range gives default too
    return int(number) if math.isfinite(number) else default
