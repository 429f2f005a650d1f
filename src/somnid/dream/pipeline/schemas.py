"""The JSON answers the pipeline asks for, as schemas and as validators.

Schemas are built per request: the evidence field is an enum of the window's line numbers and
the decision's target an enum of the candidate entries, so a grammar-constrained model
cannot name a line or an entry that is not there, and ``maxItems`` bounds the list (small
models otherwise repeat one item until the length cap). Every property is required and no
other is allowed (what llama.cpp-style grammars support). The validators check the answer
whatever the server did with the schema, and say precisely what is wrong, for one repair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from somnid.dream.llm import answer_json

MEMORY_KINDS = (
    "event",
    "fact",
    "preference",
    "plan",
    "decision",
    "pitfall",
    "todo",
    "procedure",
    "about_user",
    "about_agent",
)
ASKED_KINDS = tuple(kind for kind in MEMORY_KINDS if kind != "about_user")
"""What the schema offers: who a fact is about is the ``who`` field, so the log's own user
needs no kind of their own (somnid puts a lasting fact about them into their profile);
``about_user`` is still read from a model without a grammar."""
ACTIONS = ("add", "merge", "supersede", "known")
NONE = "none"
MAX_TEXT = 600
MAX_EVIDENCE = 6
"""A memory rests on a few lines; somnid anchors it on the neighbours its text needs."""
ASKED_EVIDENCE = 2
"""What the schema lets a model cite for one memory: the line that says it and the line it
answers. A model citing a run of lines for a summary writes one person's facts on the
other; one line is one speaker's, and says whose the memory is."""


class AnswerError(ValueError):
    """An answer that does not fit its schema; the message says what to fix."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """One memory as the model proposed it."""

    kind: str
    text: str
    evidence: tuple[str, ...]
    who: str | None = None
    """Whom the model says the memory is about (checked against the lines, never trusted)."""


@dataclass(frozen=True, slots=True)
class Decision:
    action: str
    target: str
    text: str


def number_of(line_id: str) -> int:
    """What the model sees and names of line ``L7``: 7 (a bare number is a third of the
    tokens of a quoted id, and evidence is most of an answer's structure)."""
    return int(line_id.removeprefix("L"))


def _line_id(raw: Any) -> str | None:
    """The line id a model named: 7, or "7" or "L7" from a model without a grammar."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return f"L{raw}"
    if isinstance(raw, str) and re.fullmatch(r"[Ll]?\d{1,6}", raw.strip()):
        return "L" + raw.strip().lstrip("Ll")
    return None


def extraction_schema(
    line_ids: list[str], max_items: int, min_items: int = 0, speakers: list[str] | None = None
) -> dict[str, Any]:
    """``min_items`` > 0 asks a grammar-constrained model for at least that many (small
    models otherwise stop after the first item of a long window). ``who`` comes first: a
    model that has said whom a memory is about writes the rest about that person."""
    who: dict[str, Any] = {"type": "string"}
    if speakers:
        who["enum"] = list(dict.fromkeys(speakers))
    return {
        "type": "object",
        "properties": {
            "memories": {
                "type": "array",
                "minItems": min(min_items, max_items),
                "maxItems": max_items,
                "items": {
                    "type": "object",
                    "properties": {
                        "who": who,
                        "evidence": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": ASKED_EVIDENCE,
                            "items": {"type": "integer", "enum": [number_of(i) for i in line_ids]},
                        },
                        "kind": {"type": "string", "enum": list(ASKED_KINDS)},
                        "text": {"type": "string", "maxLength": MAX_TEXT},
                    },
                    "required": ["who", "evidence", "kind", "text"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["memories"],
        "additionalProperties": False,
    }


def decision_schema(targets: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(ACTIONS)},
            "target": {"type": "string", "enum": [*targets, NONE]},
            "text": {"type": "string", "maxLength": MAX_TEXT * 2},
        },
        "required": ["action", "target", "text"],
        "additionalProperties": False,
    }


def parse_json(content: str) -> Any:
    """The JSON object in a reply: the whole text, or the outermost ``{…}`` in it (models
    without a grammar wrap JSON in prose or a code fence)."""
    text = content.strip()
    try:
        return answer_json.loads(text)
    except answer_json.BadJson as exc:
        if not exc.syntax:  # JSON, but nested too deep or a number too long
            raise AnswerError(f"the answer's JSON cannot be read: {exc}") from None
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise AnswerError("the answer holds no JSON object")
    try:
        return answer_json.loads(text[start : end + 1])
    except answer_json.BadJson as exc:
        raise AnswerError(f"the answer is not valid JSON ({exc})") from None


def _object(
    raw: Any, keys: tuple[str, ...], where: str, optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise AnswerError(f"{where} must be a JSON object")
    missing = [key for key in keys if key not in raw]
    if missing:
        raise AnswerError(f"{where} lacks {', '.join(missing)}")
    extra = sorted(set(raw) - set(keys) - set(optional))
    if extra:
        raise AnswerError(f"{where} has unknown keys: {', '.join(extra)}")
    return raw


def _text(raw: Any, where: str, limit: int, *, empty: bool = False) -> str:
    if not isinstance(raw, str):
        raise AnswerError(f"{where} must be a string")
    text = " ".join(raw.split())
    if not text and not empty:
        raise AnswerError(f"{where} is empty")
    if len(text) > limit:
        raise AnswerError(f"{where} is longer than {limit} characters")
    return text


def read_extraction(raw: Any, line_ids: list[str], max_items: int) -> list[Proposal]:
    body = _object(raw, ("memories",), "the answer")
    items = body["memories"]
    if not isinstance(items, list):
        raise AnswerError("memories must be a list")
    if len(items) > max_items:
        raise AnswerError(f"memories has {len(items)} items; at most {max_items}")
    known = set(line_ids)
    proposals = []
    for number, item in enumerate(items, start=1):
        where = f"memories[{number}]"
        item = _object(item, ("evidence", "kind", "text"), where, optional=("who",))
        kind = item["kind"]
        if kind not in MEMORY_KINDS:
            raise AnswerError(f"{where}.kind must be one of {', '.join(MEMORY_KINDS)}")
        evidence = item["evidence"]
        if not isinstance(evidence, list) or not evidence:
            raise AnswerError(f"{where}.evidence must be a non-empty list of line numbers")
        ids: list[str] = []
        for raw in evidence:
            line_id = _line_id(raw)
            if line_id is None or line_id not in known:
                raise AnswerError(
                    f"{where}.evidence names {str(raw)[:20]!r}, which is not a line of this "
                    f"window ({number_of(line_ids[0])}…{number_of(line_ids[-1])})"
                )
            if line_id not in ids:
                ids.append(line_id)
        if len(ids) > MAX_EVIDENCE:
            raise AnswerError(f"{where}.evidence has more than {MAX_EVIDENCE} lines")
        text = whole_sentences(_text(item["text"], f"{where}.text", MAX_TEXT))
        who = item.get("who")
        who = " ".join(who.split()) or None if isinstance(who, str) else None
        proposals.append(Proposal(kind, text, tuple(ids), who))
    return proposals


_SENTENCE_END = re.compile(r"[.!?。！？](?=\s|$)")


def whole_sentences(text: str, limit: int = MAX_TEXT) -> str:
    """A text that reached the length cap (a grammar stops it there, mid-word) ends at its
    last whole sentence, if one ends past the first third."""
    if len(text) < limit - 10:
        return text
    ends = [m.end() for m in _SENTENCE_END.finditer(text)]
    last = ends[-1] if ends else 0
    return text[:last] if last > len(text) // 3 else text


def read_decision(raw: Any, targets: list[str]) -> Decision:
    body = _object(raw, ("action", "target", "text"), "the answer")
    action, target = body["action"], body["target"]
    if action not in ACTIONS:
        raise AnswerError(f"action must be one of {', '.join(ACTIONS)}")
    if target not in (*targets, NONE):
        raise AnswerError(f"target must be one of {', '.join([*targets, NONE])}")
    text = _text(body["text"], "text", MAX_TEXT * 2, empty=True)
    if action in ("merge", "supersede"):
        if target == NONE:
            raise AnswerError(f"{action} needs a target: one of {', '.join(targets)}")
        if not text:
            raise AnswerError(f"{action} needs the text of the entry as it should now read")
    return Decision(action, target, text)
