"""What the dream tools accept from a model and how they show entries back to it.

Inputs are checked here and refused with an :class:`InvalidInput` that says what to send
instead; the tools turn it into an ``error: …`` answer the model can act on.
"""

from __future__ import annotations

import datetime as dt
import json
import re

from somnid.errors import BrokenFile, InvalidInput
from somnid.memory.clock import to_datetime
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.memory.names import slugify
from somnid.memory.text import one_line, type_word
from somnid.store import frontmatter

MAX_DESCRIPTION = 300
MAX_FIELD = 500
MAX_BODY = 40_000
LINE_DESCRIPTION = 160

MEMORY_KINDS = (Kind.KNOWLEDGE, Kind.SKILL, Kind.EPISODE)
_KIND_WORDS = {
    "knowledge": Kind.KNOWLEDGE,
    "skill": Kind.SKILL,
    "skills": Kind.SKILL,
    "episode": Kind.EPISODE,
    "episodes": Kind.EPISODE,
    "intention": Kind.INTENTION,
    "intentions": Kind.INTENTION,
    "profile": Kind.PROFILE,
    "profiles": Kind.PROFILE,
}
_SALIENCE = {"low": "low", "mid": "mid", "medium": "mid", "high": "high"}
_FALSE = {"false", "no", "0", "off"}
_BANNER = re.compile(r"^\s*>.*(待验证|pending verification)", re.IGNORECASE)


def kinds_of(raw: str, allowed: tuple[Kind, ...]) -> tuple[Kind, ...]:
    """``""`` or ``all``: every allowed kind; else the one named (plurals accepted)."""
    word = raw.strip().lower()
    if word in ("", "all"):
        return allowed
    kind = _KIND_WORDS.get(word)
    if kind is None or kind not in allowed:
        names = ", ".join(k.value for k in allowed)
        raise InvalidInput(f"kind must be one of {names}, not {raw!r}")
    return (kind,)


def kind_of(raw: str, allowed: tuple[Kind, ...]) -> Kind:
    if not raw.strip() or raw.strip().lower() == "all":
        names = ", ".join(k.value for k in allowed)
        raise InvalidInput(f"give a kind: one of {names}")
    return kinds_of(raw, allowed)[0]


def name_of(raw: str) -> str:
    """The safe name a model's name becomes; refuses paths and empty names."""
    return slugify(raw)


def checked_line(
    text: str, what: str, *, limit: int = MAX_DESCRIPTION, required: bool = True
) -> str:
    """``text`` on one line (:func:`somnid.memory.text.one_line`); refused when empty (if
    required) or too long."""
    line = one_line(text)
    if required and not line:
        raise InvalidInput(f"{what} is empty; write one sentence")
    if len(line) > limit:
        raise InvalidInput(
            f"{what} has {len(line)} characters; keep it to one sentence of at most {limit} "
            "and put the details in the body"
        )
    return line


def body_of(text: str, what: str = "body") -> str:
    body = text.strip("\n")
    if len(body) > MAX_BODY:
        raise InvalidInput(f"{what} has {len(body)} characters; keep it under {MAX_BODY}")
    return body


def without_front_matter(text: str) -> tuple[str, bool]:
    """``text`` without a leading YAML front-matter block (somnid writes headers itself)."""
    stripped = text.strip()
    if not stripped.startswith(frontmatter.FENCE):
        return stripped, False
    try:
        doc = frontmatter.parse(stripped)
    except BrokenFile:
        return stripped, False
    if not doc.meta:
        return stripped, False
    return doc.body.strip(), True


def salience_of(raw: str) -> str:
    word = raw.strip().lower() or "low"
    if word not in _SALIENCE:
        raise InvalidInput(f"salience must be low, mid or high, not {raw!r}")
    return _SALIENCE[word]


def when_of(raw: str, tz: dt.tzinfo) -> dt.datetime | None:
    if not raw.strip():
        return None
    when = to_datetime(raw.strip(), tz)
    if when is None:
        raise InvalidInput(
            f"when must be an ISO date or time (YYYY-MM-DD or YYYY-MM-DDTHH:MM), not {raw!r}"
        )
    return when.astimezone(tz)


def tags_of(raw: str) -> str:
    parts = [part.strip() for part in re.split(r"[,，、]", raw) if part.strip()]
    return ", ".join(parts)


def pending_banner(body: str) -> bool:
    """Whether ``body`` opens with the original's "⚠️ pending verification" blockquote."""
    first = next((line for line in body.split("\n") if line.strip()), "")
    return bool(_BANNER.match(first))


def without_banner(body: str) -> str:
    lines = body.split("\n")
    for index, line in enumerate(lines):
        if line.strip():
            if _BANNER.match(line):
                return "\n".join(lines[index + 1 :]).lstrip("\n")
            break
    return body


def unverified(entry: Entry) -> bool:
    """``verified: false`` in the front-matter, or the original's banner atop the body."""
    value = entry.meta.get("verified")
    if value is False or (isinstance(value, str) and value.strip().lower() in _FALSE):
        return True
    return pending_banner(entry.body)


def merge_refused(entry: Entry) -> bool:
    """An entry whose front-matter says ``auto_merge: false`` is kept by a person: a dream
    neither changes nor archives it."""
    value = entry.meta.get("auto_merge")
    if value is False or value == 0:
        return True
    return isinstance(value, str) and value.strip().lower() in _FALSE


_LOG_NAME = re.compile(r"\d{4}-\d{2}-\d{2}_\d{3,}(?:-\w+)?")


def from_a_log(entry: Entry) -> bool:
    """Whether a dream made ``entry`` from a session log (its ``source`` names a log, its
    ``evidence`` the lines); else a person wrote it (a ``source`` of theirs, a URL, is no
    log), and a dream's correction is merged into it, never retiring it."""
    source = str(entry.meta.get("source") or "")
    return bool(_LOG_NAME.fullmatch(source)) and bool(entry.meta.get("evidence"))


def short(text: str, limit: int = LINE_DESCRIPTION) -> str:
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def entry_line(entry: Entry, tz: dt.tzinfo, match: float | None = None) -> str:
    """``- [kind] name (match, type, score, stability, …) — description``."""
    bits = [] if match is None else [f"match={match:.2f}"]
    if entry.kind is not Kind.PROFILE:
        vitals = entry.vitals(tz)
        bits += [
            f"type={type_word(entry.entry_type) or '-'}",  # never a line of its own
            f"score={vitals.score:.2f}",
            f"stability={vitals.stability}",
        ]
    if unverified(entry):
        bits.append("unverified")
    if entry.kind is Kind.EPISODE:
        when = to_datetime(entry.field("when"), tz)
        if when is not None:
            bits.append(f"when={when.astimezone(tz):%Y-%m-%d %H:%M}")
    if entry.kind is Kind.INTENTION:
        said = entry.text_field("status") or "open"
        bits.append(f"status={type_word(said) or json.dumps(short(said, 40), ensure_ascii=False)}")
    description = entry.description or entry.body.strip().split("\n", 1)[0]
    head = f"- [{entry.kind.value}] {entry.name}"
    if bits:
        head += f" ({', '.join(bits)})"
    return f"{head} — {short(description)}" if description.strip() else head
