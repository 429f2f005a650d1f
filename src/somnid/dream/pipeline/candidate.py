"""A proposal made whole by somnid: who said its lines and when, from the lines themselves,
and its relative dates made absolute."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from somnid.dream.pipeline.schemas import Proposal
from somnid.dream.pipeline.windows import Line, Window
from somnid.memory.dates import absolutise

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
QUOTE_CHARS = 1200


@dataclass(slots=True)
class Candidate:
    kind: str
    text: str
    """The memory as it will be stored: relative dates resolved, attributed if the model
    wrote it in the speaker's own first person."""
    lines: tuple[Line, ...]
    log: str
    window: int
    when: dt.datetime | None
    actors: list[str]
    dates: list[str] = field(default_factory=list)
    user: str = "default"
    """The log's own user: the only user whose profile this candidate may go to."""
    about: list[str] = field(default_factory=list)
    """Who the memory is about: the speakers whose own lines say it (somnid's finding)."""

    @property
    def evidence_texts(self) -> list[str]:
        """What the candidate may draw on: its lines, their speakers, resolved dates."""
        return [f"{line.speaker} {line.text}" for line in self.lines] + self.dates

    @property
    def about_own_user(self) -> bool:
        """About the log's own user: said in their own lines and about them alone."""
        own = {line.speaker for line in self.lines if line.own_user}
        if self.about:
            return bool(own) and set(self.about) <= own
        return bool(own)

    @property
    def line_ids(self) -> list[str]:
        return [line.id for line in self.lines]

    def description(self) -> str:
        return first_sentence(self.text)

    def quotes(self, tz: dt.tzinfo, budget: int = QUOTE_CHARS, *, prefix: str = "") -> str:
        """The evidence lines, quoted: what the memory rests on, for a person to check
        and for recall to find by what was actually said. ``prefix`` (a log's name) goes
        before each line id where quotes from several logs meet."""
        rows: list[str] = []
        used = 0
        lead = f"{prefix} " if prefix else ""
        for line in self.lines:
            day = f" ({line.when.astimezone(tz).date().isoformat()})" if line.when else ""
            row = f"> {lead}{line.id} {line.speaker}{day}: {line.text}"
            if used + len(row) > budget:
                rows.append("> …")
                break
            rows.append(row)
            used += len(row)
        return "\n".join(rows)

    def provenance(self, tz: dt.tzinfo) -> str:
        times = sorted({_minute(line.when.astimezone(tz)) for line in self.lines if line.when})
        span = f", {times[0]}" + (f" to {times[-1]}" if len(times) > 1 else "") if times else ""
        return f"Source: session log {self.log}, lines {', '.join(self.line_ids)}{span}."


def first_sentence(text: str) -> str:
    """The first sentence of ``text``, cut at 300 characters: an entry's description."""
    first = _SENTENCE_END.split(text, maxsplit=1)[0]
    if len(first) > 300:
        first = first[:297].rstrip() + "…"
    return first


def candidate_of(proposal: Proposal, window: Window, tz: dt.tzinfo, user: str) -> Candidate:
    lines = tuple(line for line_id in proposal.evidence if (line := window.line(line_id)))
    spoken = [line for line in lines if line.role != "tool"] or list(lines)
    when = min((line.when for line in lines if line.when), default=None)
    actors: dict[str, None] = {}
    for line in spoken:
        actors.setdefault(line.speaker, None)
    text = proposal.text
    ref = when.astimezone(tz).date() if when else None
    dates: list[str] = []
    if ref is not None:
        text, dates = absolutise(text, ref)
        # Dates said in the evidence count too: "yesterday" in a line the model paraphrased.
        for line in lines:
            if line.when is not None:
                dates += absolutise(line.text, line.when.astimezone(tz).date())[1]
    unique_dates = list(dict.fromkeys(dates))
    return Candidate(
        proposal.kind, text, lines, window.log, window.number, when, list(actors), unique_dates,
        user,
    )  # fmt: skip


def _minute(when: dt.datetime) -> str:
    """``YYYY-MM-DD HH:MM``, the year in four digits (``%Y`` writes year 2 as ``2``)."""
    return f"{when.date().isoformat()} {when:%H:%M}"
