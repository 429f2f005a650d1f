"""What each person is like: one knowledge entry per person, that later sessions update.

A lasting fact or preference about a person (not the log's own user, whose facts go to their
profile) is a line of that person's entry, ``knowledge/about-<name>`` (``type: person``,
``about: <name>``), dated by the conversation that said it::

    - Ann works as a nurse in Lisbon. (2023-05-08)
    - Ann prefers green tea. (2023-05-25)

    ## Superseded
    - Ann works as a nurse in Porto. (2023-05-08; superseded 2023-05-25)

    ## Said
    > 2023-05-08_001 L3 Ann (2023-05-08): I'm a nurse here in Porto.

    Source: session log 2023-05-08_001, lines L3, 2023-05-08 13:56.

A later fact about the same thing merges into its line or supersedes it (the older line
moves under "Superseded": kept, never deleted); the quoted lines and sources accumulate.
This module owns that body format: it parses a body (lines a person added by hand are
kept where they are) and renders it back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from somnid.dream import items
from somnid.errors import InvalidInput
from somnid.memory.names import name_for

PERSON_TYPE = "person"
PREFIX = "about-"
SUPERSEDED = "## Superseded"
SAID = "## Said"
MAX_FACTS = 200
MAX_QUOTES = 120
_FACT = re.compile(r"^- (?P<text>.*?)(?: \((?P<date>\d{4}-\d{2}-\d{2})(?P<rest>[^()]*)\))?$")


def entry_name(person: str) -> str:
    """The entry of a person: ``about-<name>``; a name that makes no safe name (``R2/D2``,
    ``Ann 🌸``) gets its readable part and a digest, so that two people never share one."""
    said = f"{PREFIX}{person}".casefold()
    try:
        return items.name_of(said)
    except InvalidInput:
        return name_for(said)


def description(person: str, lang: str) -> str:
    return f"关于 {person} 的了解" if lang == "zh" else f"What is known of {person}"


@dataclass(slots=True)
class Fact:
    text: str
    date: str | None

    def render(self, note: str = "") -> str:
        if self.date is None:
            return f"- {self.text}"
        return f"- {self.text} ({self.date}{note})"


@dataclass(slots=True)
class PersonBody:
    top: list[str] = field(default_factory=list)
    """The facts section's lines as written, hand-added ones included."""
    superseded: list[str] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    """Sections a person added by hand, kept at the end as they were."""

    @property
    def facts(self) -> list[tuple[int, Fact]]:
        """The fact lines, with their place in :attr:`top`."""
        found = []
        for at, line in enumerate(self.top):
            match = _FACT.match(line)
            if match and line.startswith("- "):
                found.append((at, Fact(match["text"].strip(), match["date"])))
        return found

    def add(self, fact: Fact) -> None:
        places = [at for at, _ in self.facts]
        at = places[-1] + 1 if places else len(self.top)
        self.top.insert(at, fact.render())
        if len(places) + 1 > MAX_FACTS:  # the oldest fact gives way, kept under Superseded
            first = places[0]
            self.superseded.append(self.top.pop(first))

    def replace(self, at: int, fact: Fact, *, superseded_on: str | None) -> None:
        """Put ``fact`` in place of the fact at ``at``; the old one goes under Superseded
        when ``superseded_on`` is given (a correction), and is folded in otherwise (a merge)."""
        old = self.top[at]
        self.top[at] = fact.render()
        if superseded_on is not None:
            match = _FACT.match(old)
            if match and match["date"]:
                old = f"- {match['text'].strip()} ({match['date']}; superseded {superseded_on})"
            self.superseded.append(old)

    def cite(self, quotes: list[str], source: str) -> None:
        for quote in quotes:
            if quote not in self.quotes and quote != "> …":
                self.quotes.append(quote)
        self.quotes = self.quotes[-MAX_QUOTES:]
        if source not in self.sources:
            self.sources.append(source)

    def render(self) -> str:
        parts = ["\n".join(self.top).strip()]
        if self.superseded:
            parts.append("\n".join([SUPERSEDED, *self.superseded]))
        parts.extend(section for section in self.other if section.strip())
        if self.quotes:
            parts.append("\n".join([SAID, *self.quotes]))
        if self.sources:
            parts.append("\n".join(self.sources))
        return "\n\n".join(part for part in parts if part) + "\n"


def parse(body: str) -> PersonBody:
    """A person entry's body; what somnid does not recognise is kept as it was."""
    parsed = PersonBody()
    section: list[str] | None = parsed.top
    extra: list[str] = []
    for line in body.split("\n"):
        if line.startswith("## "):
            if extra:
                parsed.other.append("\n".join(extra).strip())
                extra = []
            heading = line.strip()
            if heading == SUPERSEDED:
                section = parsed.superseded
            elif heading == SAID:
                section = parsed.quotes
            else:
                section = None
                extra = [line]
            continue
        if line.startswith("Source: "):
            parsed.sources.append(line)
            continue
        if section is None:
            extra.append(line)
        elif section is parsed.top or line.strip():
            section.append(line)
    if extra:
        parsed.other.append("\n".join(extra).strip())
    while parsed.top and not parsed.top[-1].strip():
        parsed.top.pop()
    return parsed
