"""What a write may put in an entry's file, checked before it is written: caller fields
(no protected keys, within front-matter's limits) and the rendered file (readable back,
within the size limit)."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from somnid.errors import BrokenFile, InvalidInput
from somnid.memory.clock import parse_time, to_datetime
from somnid.memory.lifecycle import MAX_STABILITY
from somnid.memory.text import control_char
from somnid.store import frontmatter
from somnid.store.reader import MAX_FILE_BYTES

# Keys a caller may not set through ``fields``: identity and history belong to somnid (the
# archive's keys too: ``archived_from`` is the name a restore brings the entry back under).
PROTECTED_KEYS = frozenset(
    {"name", "created", "archived_at", "archive_reason", "archived_from", "restored_at"}
)
ARCHIVE_KEYS = ("archived_at", "archive_reason", "archived_from")
"""What archiving adds to an entry's front-matter."""
# Keys a caller may set only to what somnid itself would write (None removes one).
_NUMBERS = {"score": (0.0, 1.0), "stability": (0.0, MAX_STABILITY)}
_TIMES = frozenset({"last_used", "last_decay"})


def render_entry(document: frontmatter.Document) -> bytes:
    """The file for ``document``, refused (400) if somnid could not read it back: a write
    never leaves a file that reads as broken (front-matter too large, too many values, or
    text YAML cannot carry, such as a lone surrogate)."""
    try:
        text = frontmatter.render(document)
        frontmatter.parse(text, round_trip=False)
        data = text.encode("utf-8")
    except BrokenFile as exc:
        raise InvalidInput(f"the entry would not be readable: {exc.detail}") from None
    except UnicodeEncodeError:
        raise InvalidInput("the entry holds text that is not valid Unicode") from None
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(f"the entry would be larger than {MAX_FILE_BYTES} bytes")
    return data


def check_fields(fields: dict[str, Any]) -> None:
    for key in fields:
        if not isinstance(key, str) or not key.strip():
            raise InvalidInput("front-matter keys must be non-empty strings")
        if control_char(key) is not None:
            # a line break in a key (NEL too) is read back as a space: another key
            raise InvalidInput(f"front-matter key {key[:40]!r} holds a control character")
        if key in PROTECTED_KEYS:
            raise InvalidInput(f"front-matter key {key!r} is managed by somnid and cannot be set")
        _check_managed(key, fields[key])
    values, chars = _extent(fields)
    # Both are lower bounds of what rendering would make: a refusal here is one the reader
    # would give anyway, only without seconds of YAML rendering first.
    if values > frontmatter.MAX_NODES:
        raise InvalidInput(
            f"the fields hold {values} values; front-matter holds at most {frontmatter.MAX_NODES}"
        )
    if chars > frontmatter.MAX_FRONT_MATTER_CHARS:
        raise InvalidInput(
            f"the fields take at least {chars} characters; front-matter holds at most "
            f"{frontmatter.MAX_FRONT_MATTER_CHARS}"
        )


def _check_managed(key: str, value: Any) -> None:
    """A value of a key decay and recall read must be one they can read: a score within
    0..1, a stability within 0..:data:`MAX_STABILITY`, a time somnid reads."""
    if value is None:
        return
    if key in _NUMBERS:
        low, high = _NUMBERS[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or not low <= value <= high:
            raise InvalidInput(f"{key} must be a number from {low:g} to {high:g}, not {value!r}")
    elif key in _TIMES and not _time(value):
        raise InvalidInput(
            f"{key} must be an ISO 8601 time such as 2026-10-03T12:00:00+00:00, "
            f"not {str(value)[:64]!r}"
        )


def _time(value: Any) -> bool:
    """A time somnid reads, given whole (``2026-12-31T25:00`` is not cut to its day)."""
    if isinstance(value, str):
        try:
            parse_time(value)
        except ValueError:
            return False
        return True
    return to_datetime(value, dt.UTC) is not None


def _extent(value: Any) -> tuple[int, int]:
    """How many values ``value`` holds and how many characters they take at least."""
    if isinstance(value, dict):
        values, chars = 1, 0
        for key, item in value.items():
            more, text = _extent(item)
            values, chars = values + more, chars + text + len(str(key))
        return values, chars
    if isinstance(value, list | tuple):
        values, chars = 1, 0
        for item in value:
            more, text = _extent(item)
            values, chars = values + more, chars + text
        return values, chars
    return 1, 0 if value is None else len(str(value))


def carry_keys(data: bytes, values: dict[str, Any]) -> bytes:
    """The entry file ``data`` with ``values`` set in its front-matter; ``data`` as it is
    when it does not parse."""
    try:
        document = frontmatter.parse(data.decode("utf-8"))
    except (BrokenFile, UnicodeDecodeError):
        return data
    for key, value in values.items():
        document.meta[key] = value
    return render_entry(document)
