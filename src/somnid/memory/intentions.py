"""Prospective memory: which open intentions to raise now, and on which cue.

Pure: entries and a day in, groups out. An intention is *due* when its due date has come
(or passed), *upcoming* within ``UPCOMING_DAYS``, *someday* without a due date, and *later*
when further out (raised only when the current message matches its cue).
"""

from __future__ import annotations

import ast
import datetime as dt
import re
from dataclasses import dataclass, field

from somnid.errors import InvalidInput
from somnid.memory.clock import local_date
from somnid.memory.entry import Entry
from somnid.memory.kinds import PRIORITIES, normalise_priority
from somnid.memory.text import control_char

UPCOMING_DAYS = 3
MAX_DUE = 10
MAX_UPCOMING = 5
MAX_SOMEDAY = 5
MAX_CUE_EXTRAS = 3
MAX_WHAT_SHOWN = 300
"""Characters of an intention's text a listing shows (a hand-written one may be a page)."""
MAX_CUE = 500  # an intention's cues, in all
MAX_SOURCE = 200

_CLOSED_WORDS = frozenset(
    {"completed", "complete", "done", "cancelled", "canceled", "expired", "closed"}
)
_CUE_SPLIT = re.compile(r"[,，、;；|]")
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_CJK = re.compile(f"[{_CJK_CHARS}]")


@dataclass(frozen=True, slots=True)
class Intention:
    id: str
    what: str
    due: dt.date | None
    cue: tuple[str, ...]
    priority: str
    status: str
    path: str


@dataclass(slots=True)
class Agenda:
    due: list[Intention] = field(default_factory=list)
    upcoming: list[Intention] = field(default_factory=list)
    someday: list[Intention] = field(default_factory=list)
    cued: list[Intention] = field(default_factory=list)  # matched the current message
    more: int = 0  # due, upcoming or someday, past their group's cap

    def __bool__(self) -> bool:
        return bool(self.due or self.upcoming or self.someday or self.cued)


def check_cue(value: object) -> str | list[str] | None:
    """An intention's cues as a caller gives them (every door: the API, the tools, MCP, a
    dream): text (``deploy, release``) or a list of texts, at most ``MAX_CUE`` characters in
    all and no control character; stripped, None when there is none. A list was stored as
    its Python text (``"['a', 'b']"``), cues no message could ever match."""
    if value is None:
        return None
    if isinstance(value, str):
        parts = [value]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        parts = value
    else:
        raise InvalidInput(
            f"cue is text ('deploy, release') or a list of texts, not {str(value)[:40]!r}"
        )
    kept = [part.strip() for part in parts if part.strip()]
    if sum(map(len, kept)) + 2 * max(0, len(kept) - 1) > MAX_CUE:
        raise InvalidInput(f"an intention's cues are longer than {MAX_CUE} characters")
    if any(control_char(part) is not None for part in kept):
        raise InvalidInput("an intention's cues may hold no control character or line break")
    if not kept:
        return None
    return kept[0] if isinstance(value, str) else kept


def check_source(value: object) -> str | None:
    """Where an intention comes from: 1 to ``MAX_SOURCE`` characters, no control one."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str) or len(value) > MAX_SOURCE or control_char(value) is not None:
        raise InvalidInput(
            f"an intention's source has 1 to {MAX_SOURCE} characters, no control ones"
        )
    return value.strip()


def split_cues(raw: object) -> tuple[str, ...]:
    """Cues are separated by commas (ASCII or Chinese), 、 or semicolons."""
    if raw is None:
        return ()
    if isinstance(raw, str) and raw.startswith("[") and raw.endswith("]"):
        raw = _listed(raw) or raw  # a list an older somnid wrote as its Python text
    if isinstance(raw, list | tuple):
        parts = [str(item) for item in raw]
    else:
        parts = _CUE_SPLIT.split(str(raw))
    return tuple(dict.fromkeys(part.strip().casefold() for part in parts if part.strip()))


def _listed(text: str) -> list[str] | None:
    """``"['gamma', 'rollout']"`` as the list of texts it writes, else None. Only a flat
    list of string literals is read (nothing is evaluated)."""
    try:
        tree = ast.parse(text[: MAX_CUE * 2], mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(tree, ast.List):
        return None
    items = [node.value for node in tree.elts if isinstance(node, ast.Constant)]
    if len(items) != len(tree.elts) or not all(isinstance(item, str) for item in items):
        return None
    return [str(item) for item in items]


def check_status(value: object) -> str:
    """An intention's ``status`` as a caller gives it: ``open`` or a word that closes it
    (``completed``, ``done``, ``cancelled``…); another (``bogus``) is read as open, and would
    be stored as a value somnid does not use: refused."""
    if not isinstance(value, str) or (
        value.strip().lower() != "open" and value.strip().lower() not in _CLOSED_WORDS
    ):
        words = ", ".join(sorted(_CLOSED_WORDS))
        raise InvalidInput(f"status is open or one of {words}, not {value!r:.40}")
    return value


def intention_of(entry: Entry, tz: dt.tzinfo) -> Intention:
    """Read an intention entry, including the original's body-line fields and its lack of a
    status key (open while live, closed once archived). A status somnid cannot use
    (``pending``, ``todo``, ``42``) is read as missing: a live intention stays open instead
    of vanishing from every list; a person's ``done`` closes it (not one that still carries
    the archive's ``archived_at``: it was brought back)."""
    said = entry.text_field("status").strip().lower()
    # Live with the archive's stamp: a restore cut short between its move and its unstamp
    # (a kill -9), or a person's copy back by hand. It is back: open, whatever it was closed as.
    restored = not entry.archived and entry.field("archived_at") is not None
    if said in _CLOSED_WORDS and not restored:
        status = "completed" if said in ("done", "complete") else said
    elif said == "open" or not entry.archived:
        status = "open"
    else:
        status = "closed"
    return Intention(
        id=entry.name,
        what=entry.description or _first_line(entry.body),
        due=local_date(entry.field("due"), tz),
        cue=split_cues(entry.field("cue")),
        priority=normalise_priority(entry.field("priority")),
        status=status,
        path=str(entry.path),
    )


def shown_what(what: str) -> str:
    """An intention's text as a listing shows it: at most ``MAX_WHAT_SHOWN`` characters."""
    return what if len(what) <= MAX_WHAT_SHOWN else what[: MAX_WHAT_SHOWN - 1].rstrip() + "…"


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip() and not line.lstrip().startswith("- "):
            return line.strip()
    return ""


def cue_matches(intention: Intention, message: str) -> bool:
    """Whether a cue is in the message: a cue that starts with a letter or digit only where
    a word starts (``cert`` in "certificate" and "the cert", not in "concert"; ``art`` not
    in "start"), a Chinese or Japanese one anywhere (they are written without spaces)."""
    text = message.casefold()
    return any(_cue_in(cue, text) for cue in intention.cue)


def _cue_in(cue: str, text: str) -> bool:
    """``cue`` in ``text`` where it may start (found with ``str.find``: a regular
    expression a cue cost ~1 ms to build, and a thousand cues held the event loop)."""
    if not cue:
        return False
    starts_a_word = cue[0].isalnum() and not _CJK.match(cue)
    at = text.find(cue)
    while at >= 0:
        before = text[at - 1] if at else ""
        # Not right after a letter or digit, unless Chinese or Japanese (我们的k8s集群).
        if not starts_a_word or not before.isalnum() or _CJK.match(before):
            return True
        at = text.find(cue, at + 1)
    return False


def _priority_rank(intention: Intention) -> int:
    return PRIORITIES.index(intention.priority) if intention.priority in PRIORITIES else 1


def agenda(intentions: list[Intention], today: dt.date, message: str | None = None) -> Agenda:
    """Group open intentions for the prompt: due (≤ 10: the most pressing first, by priority,
    then the most recent), upcoming (≤ 5, soonest first), someday (≤ 5, by priority), how
    many of them are not shown, then up to 3 more whose cue the current message matches,
    from any group not shown."""
    open_ones = sorted(
        (i for i in intentions if i.status == "open"),
        key=lambda i: (i.due or dt.date.max, _priority_rank(i), i.id),
    )
    due = [i for i in open_ones if i.due is not None and i.due <= today]
    due.sort(key=lambda i: (_priority_rank(i), -(i.due or today).toordinal(), i.id))
    upcoming = [
        i for i in open_ones if i.due is not None and 0 < (i.due - today).days <= UPCOMING_DAYS
    ]
    someday = sorted((i for i in open_ones if i.due is None), key=_priority_rank)
    result = Agenda(due[:MAX_DUE], upcoming[:MAX_UPCOMING], someday[:MAX_SOMEDAY])
    result.more = (
        len(due)
        + len(upcoming)
        + len(someday)
        - sum(map(len, (result.due, result.upcoming, result.someday)))
    )
    if message:
        shown = {i.id for i in (*result.due, *result.upcoming, *result.someday)}
        cued = [i for i in open_ones if i.id not in shown and cue_matches(i, message)]
        cued.sort(key=_priority_rank)
        result.cued = cued[:MAX_CUE_EXTRAS]
        listed = {i.id for i in (*due, *upcoming, *someday)}  # shown now: no longer "more"
        result.more -= sum(1 for i in result.cued if i.id in listed)
    return result
