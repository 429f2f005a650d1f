"""What a caller's fields become: the fields somnid reads, checked (a value it would misread
is refused, never quietly made another), and a new entry's front-matter."""

from __future__ import annotations

import datetime as dt
from typing import Any

from somnid.errors import InvalidInput
from somnid.memory.clock import local_date, parse_time
from somnid.memory.intentions import check_cue, check_source, check_status
from somnid.memory.kinds import (
    Kind,
    check_priority,
    check_salience,
    normalise_priority,
    normalise_salience,
)
from somnid.memory.lifecycle import initial_score
from somnid.memory.text import control_char, type_word

_DEFAULT_TYPE = {
    Kind.KNOWLEDGE: "fact",
    Kind.EPISODE: "episode",
    Kind.INTENTION: "intention",
    Kind.SKILL: "skill",
    Kind.PROFILE: "identity",
}


def parse_due(value: object, tz: dt.tzinfo) -> dt.date:
    """An intention's due date: an ISO date (any, ``9999-12-31`` too) or date-time, whole;
    anything else is refused."""
    day = local_date(value, tz) if isinstance(value, dt.date | str) else None
    try:
        if isinstance(value, str) and len(value.strip()) != len("2026-12-31"):
            day = local_date(parse_time(value), tz)  # strict, then in the zone
    except ValueError:
        day = None
    if day is None:
        raise InvalidInput(f"due must be an ISO date such as 2026-12-31, not {str(value)[:64]!r}")
    return day


MAX_PROJECT = 200
"""A project's id, as the routes take it (``project=``)."""


def checked_fields(kind: Kind, fields: dict[str, Any]) -> dict[str, Any]:
    """The fields somnid reads, as given by a caller, checked: a value it would misread is
    refused (400), never quietly made another (``verified: "false"`` was true)."""
    if "description" in fields and not isinstance(fields["description"], str):
        raise InvalidInput("description is text: give it on its own (a field cannot remove it)")
    if "verified" in fields and not isinstance(fields["verified"], bool | None):
        raise InvalidInput(f"verified must be true or false, not {fields['verified']!r:.40}")
    kind_of = fields.get("type")
    if kind_of is not None:
        word = type_word(kind_of)
        if word is None:
            raise InvalidInput(f"type must be one word such as 'fact', not {kind_of!r:.40}")
        fields["type"] = word
    project = fields.get("project")
    said = str(project) if isinstance(project, int) and not isinstance(project, bool) else project
    if project is not None and (
        not isinstance(said, str) or not 1 <= len(said) <= MAX_PROJECT or control_char(said)
    ):
        raise InvalidInput(  # as every route's project: else no request could ask for it
            f"project is an id of 1 to {MAX_PROJECT} characters, no control ones, such as "
            f"'somnid' or 42, not {project!r:.40}"
        )
    if kind is Kind.INTENTION:
        if fields.get("priority") is not None:
            fields["priority"] = check_priority(fields["priority"])
        for key, check in (("cue", check_cue), ("source", check_source), ("status", check_status)):
            if fields.get(key) is not None:  # None: a change that removes the key
                fields[key] = check(fields[key])
    if kind is Kind.EPISODE and fields.get("salience") is not None:
        fields["salience"] = check_salience(fields["salience"])
    if kind is Kind.EPISODE and fields.get("when") is not None and not _iso(fields["when"]):
        raise InvalidInput(
            "when must be an ISO 8601 time such as 2026-10-03T12:00:00+00:00, "
            f"not {str(fields['when'])[:64]!r}"
        )
    return fields


def _iso(value: object) -> bool:
    """An ISO 8601 date or date-time of the calendar (``0001-01-01`` is kept as written,
    though no time is read from it; ``2026-02-30``, ``5`` and ``true`` are no time)."""
    if isinstance(value, dt.date):
        return True
    if not isinstance(value, str):
        return False
    try:
        dt.datetime.fromisoformat(value.strip())
    except ValueError:
        return False
    return True


def new_entry_meta(
    kind: Kind, now: dt.datetime, description: str, fields: dict[str, Any]
) -> dict[str, Any]:
    """The front-matter of a new entry: somnid's keys first, then the caller's, in order."""
    extra = dict(fields)
    verified = bool(extra.pop("verified", True))
    salience = normalise_salience(extra.pop("salience", "low")) if kind is Kind.EPISODE else None
    meta: dict[str, Any] = {
        "description": description,
        "type": str(extra.pop("type", None) or _DEFAULT_TYPE[kind]),
        "stability": 0,
        "score": initial_score(kind, verified=verified, salience=salience),
        "created": now,
        "last_used": now,
        "last_decay": now,
    }
    if kind in (Kind.KNOWLEDGE, Kind.SKILL) and not verified:
        meta["verified"] = False
    if kind is Kind.EPISODE:
        meta["salience"] = salience
        meta["when"] = extra.pop("when", None) or now
    if kind is Kind.INTENTION:
        meta["status"] = "open"
        meta["priority"] = normalise_priority(extra.pop("priority", "mid"))
        due = extra.pop("due", None)
        if due not in (None, ""):
            meta["due"] = parse_due(due, now.tzinfo or dt.UTC)
        cue = extra.pop("cue", None)
        if cue:
            meta["cue"] = cue  # text or a list, as checked_fields left it
        if extra.get("source", "") is None:  # blank: none
            extra.pop("source")
    meta.update(extra)
    return meta
