"""Candidates written as memory, through the services and the dream's ledger.

- event → an episode (``when`` from its first line, ``actors`` its speakers, ``source``
  the log, ``evidence`` the line ids); fact / preference / decision / pitfall → knowledge
  of that type; procedure → a skill; todo → an intention (due from a date it names);
  about_user → a line in the log's own user's profile; about_agent → a line in about_me.
- merge rewrites an existing entry with the merged text and adds the new provenance, and
  loses nothing: an old text (a person's sections, a name the model left out) that the
  merged text does not carry stays as it was, the candidate's own text after it when it
  says more (:func:`_merged`); supersede writes
  the corrected memory and archives the old one with a pointer to it (never a skill a
  person keeps, ``auto_merge: false``: the correction is added beside it).
- A profile line is added, never one taken away: a full profile (:data:`MAX_PROFILE_LINES`)
  takes no more, and the journal says so.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from typing import Any

from somnid.dream import items
from somnid.dream.guard import dreamer_role_phrase
from somnid.dream.ledger import ItemRef, Ledger
from somnid.dream.pipeline import people
from somnid.dream.pipeline.candidate import Candidate, first_sentence
from somnid.dream.profile_gate import ProfileRefused, Refusal
from somnid.dream.similarity import carries, content_words, restates
from somnid.dream.tools import DreamTools
from somnid.errors import Conflict, InvalidInput, NotFound, PreconditionFailed
from somnid.memory.entry import Entry
from somnid.memory.kinds import SELF_PROFILE, Kind

KNOWLEDGE_TYPES = {"fact", "preference", "decision", "pitfall"}
KIND_OF = {
    "event": Kind.EPISODE,
    "plan": Kind.EPISODE,
    "procedure": Kind.SKILL,
    "todo": Kind.INTENTION,
    **dict.fromkeys(KNOWLEDGE_TYPES, Kind.KNOWLEDGE),
}
MAX_PROFILE_LINES = 200
_DAY = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_PROFILE_LINE = re.compile(r"^\s*(?:[-*]\s+)?(?P<text>.*?)(?:\s+\(\d{4}-\d{2}-\d{2}[^()]*\))?\s*$")


def kind_of(candidate: Candidate) -> Kind:
    if candidate.kind in ("about_user", "about_agent"):
        return Kind.PROFILE
    return KIND_OF[candidate.kind]


@dataclass(frozen=True, slots=True)
class PersonFact:
    """What to do with a fact in its person's entry: ``add`` a line, ``merge`` into the
    line at ``at`` (which read ``old``) or ``supersede`` it, with ``text``."""

    action: str
    at: int = -1
    old: str = ""
    text: str = ""


RETRIES = 5
NUMBERED_NAMES = 9
"""A dream's memory takes its text's first words as its name, then ``-2`` … ``-9``, then a
digest of its text."""


def _name(text: str) -> str:
    words = [w for w in re.findall(r"[^\W_]+", text.casefold()) if len(w) > 2][:6]
    try:
        return items.name_of("-".join(words)[:60] or "memory")
    except InvalidInput:
        return "memory"


class Writer:
    def __init__(self, tools: DreamTools, ledger: Ledger, lang: str) -> None:
        self.tools = tools
        self.ledger = ledger
        self.lang = lang
        self.tz = tools.clock.tz

    def _fields(self, candidate: Candidate) -> dict[str, Any]:
        fields: dict[str, Any] = {"source": candidate.log, "evidence": candidate.line_ids}
        if candidate.actors:
            fields["actors"] = ", ".join(candidate.actors)
        if candidate.about:
            fields["about"] = ", ".join(candidate.about)
        if candidate.dates:
            fields["dates"] = list(candidate.dates)
        return fields

    def _body(self, candidate: Candidate, text: str | None = None) -> str:
        quotes = candidate.quotes(self.tz)
        return f"{text or candidate.text}\n\n{quotes}\n\n{candidate.provenance(self.tz)}"

    async def add(self, candidate: Candidate, *, supersedes: str | None = None) -> Entry | None:
        """Write ``candidate`` as a new memory; None when it went into a profile."""
        kind = kind_of(candidate)
        if kind is Kind.PROFILE:
            await self.profile_line(candidate)
            return None
        if kind is Kind.INTENTION:
            return await self._intention(candidate)
        fields = self._fields(candidate)
        if supersedes:
            fields["supersedes"] = supersedes
        description = items.checked_line(candidate.description(), "description")
        memories = self.tools.memories
        if kind is Kind.EPISODE:
            when = candidate.when
            if candidate.kind == "plan":
                fields["type"] = "plan"
                when = _planned_for(candidate, self.tz) or when
            if when is not None:
                fields["when"] = when.astimezone(self.tz)
            fields["salience"] = "low"
            entry = await memories.create(
                Kind.EPISODE,
                None,
                description=description,
                body=self._body(candidate),
                fields=fields,
            )
        else:
            if kind is Kind.KNOWLEDGE:
                fields["type"] = candidate.kind
            if candidate.when is not None:
                fields["observed"] = candidate.when.astimezone(self.tz)
            entry = await self._create_named(
                kind, _name(candidate.text), description, candidate, fields
            )
        self.ledger.add_created(ItemRef(kind, entry.name, str(entry.path)))
        return entry

    async def _create_named(
        self, kind: Kind, base: str, description: str, candidate: Candidate, fields: dict[str, Any]
    ) -> Entry:
        # A few numbers, then the text's own digest: memories a model words alike ("Alice
        # said that she ...") share their first six words, and after 49 numbers the 50th
        # such memory was dropped for want of a name, its log marked processed.
        digest = hashlib.sha256(candidate.text.encode("utf-8")).hexdigest()
        numbered = (f"{base}-{number}" for number in range(2, NUMBERED_NAMES + 1))
        for name in (base, *numbered, f"{base}-{digest[:8]}", f"{base}-{digest[:16]}"):
            try:
                return await self.tools.memories.create(
                    kind, name, description=description, body=self._body(candidate), fields=fields
                )
            except Conflict:
                continue
        raise Conflict(f"no free name for {base!r}")

    async def _intention(self, candidate: Candidate) -> Entry:
        today = self.tools.clock.now().astimezone(self.tz).date()
        days = _DAY.findall(" ".join(candidate.dates))
        due = next((d for d in days if dt.date.fromisoformat(d) >= today), None)
        cue = ", ".join(sorted(content_words(candidate.text), key=len, reverse=True)[:3])
        intention = await self.tools.intentions.add(
            candidate.text[:300], due=due, cue=cue or None, source=candidate.log
        )
        self.ledger.add_created(ItemRef(Kind.INTENTION, intention.id, str(intention.path)))
        entry = await self.tools.memories.get(Kind.INTENTION, intention.id)
        return entry

    async def merge(self, target: Entry, candidate: Candidate, text: str) -> Entry:
        """Rewrite ``target`` with the merged ``text``, keeping its provenance and adding
        the candidate's; written over the version read only (a person's edit meanwhile is
        read again, and kept as :func:`_merged` keeps what the text leaves out)."""
        read = target.body
        for _ in range(RETRIES):
            # The merged text was made from the text first read: never over another.
            body, description = _merged(
                target, candidate, text if target.body == read else "", self.tz
            )
            body += f"\n{candidate.provenance(self.tz)}"
            try:
                entry, _ = await self.tools.edits.update(
                    target.kind,
                    target.name,
                    description=description,
                    body=body,
                    stability_delta=1,
                    score_delta=0.1,
                    verified=None,
                    if_match=target.etag,
                )
            except PreconditionFailed:
                target = await self.tools.memories.get(target.kind, target.name)
                continue
            entry = await self._merge_fields(entry, candidate)
            self.ledger.add_updated(ItemRef(target.kind, entry.name, str(entry.path)))
            return entry
        raise PreconditionFailed(f"{target.kind.value} {target.name!r} kept changing; try again")

    async def _merge_fields(self, entry: Entry, candidate: Candidate) -> Entry:
        """A merged entry's front matter says who and which lines it now rests on."""
        fields: dict[str, Any] = {}
        for key, new in (("actors", candidate.actors), ("about", candidate.about)):
            old = [p.strip() for p in str(entry.meta.get(key) or "").split(",") if p.strip()]
            joined = list(dict.fromkeys([*old, *new]))
            if joined != old:
                fields[key] = ", ".join(joined)
        old_evidence = [str(e) for e in entry.meta.get("evidence") or []]
        same_log = str(entry.meta.get("source") or "") == candidate.log
        cited = [line if same_log else f"{candidate.log}:{line}" for line in candidate.line_ids]
        if cited and not set(cited) <= set(old_evidence):
            fields["evidence"] = list(dict.fromkeys([*old_evidence, *cited]))
        if not fields:
            return entry
        return await self.tools.memories.update(entry.kind, entry.name, fields=fields)

    async def supersede(self, target: Entry, candidate: Candidate, text: str) -> Entry | None:
        corrected = Candidate(
            candidate.kind if kind_of(candidate) is target.kind else _kind_word(target),
            text, candidate.lines, candidate.log, candidate.window, candidate.when,
            candidate.actors, candidate.dates, candidate.user,
        )  # fmt: skip
        entry = await self.add(corrected, supersedes=f"{target.kind.value}/{target.name}")
        if entry is None:
            return None
        reason = f"superseded by {entry.kind.value}/{entry.name} (dream, log {candidate.log})"
        archived = await self.tools.edits.archive(target.kind, target.name, reason)
        self.ledger.add_archived(ItemRef(target.kind, target.name, str(archived.path)))
        return entry

    async def person_facts(self, person: str) -> list[tuple[int, str]]:
        """The fact lines of ``person``'s entry (their place and text); none yet: []."""
        try:
            entry = await self.tools.memories.get(Kind.KNOWLEDGE, people.entry_name(person))
        except NotFound:
            return []
        return [(at, fact.text) for at, fact in people.parse(entry.body).facts]

    async def person_fact(self, candidate: Candidate, change: PersonFact) -> str:
        """Write a fact into its person's entry (made on first use); the outcome counted."""
        person = candidate.about[0]
        name = people.entry_name(person)
        day = candidate.when.astimezone(self.tz).date().isoformat() if candidate.when else None
        memories = self.tools.memories
        for _ in range(RETRIES):
            try:
                before = await memories.get(Kind.KNOWLEDGE, name)
            except NotFound:
                before = None
            body = people.parse(before.body if before is not None else "")
            text = change.text or candidate.text
            fact = people.Fact(text, day)
            facts = {at: fact.text for at, fact in body.facts}
            if change.action == "merge" and not carries(text, change.old):
                # The merged line leaves out what the old one says: the old line stays, and
                # the candidate's own line beside it, if it says anything more.
                if carries(change.old, candidate.text):
                    return "known"
                body.add(people.Fact(candidate.text, day))
                outcome = "added"
            elif change.action in ("merge", "supersede") and facts.get(change.at) == change.old:
                superseded = day or "" if change.action == "supersede" else None
                body.replace(change.at, fact, superseded_on=superseded)
                outcome = "merged" if change.action == "merge" else "superseded"
            else:  # the line changed meanwhile (a person edited it): the candidate's own
                body.add(fact if change.action == "add" else people.Fact(candidate.text, day))
                outcome = "added"
            body.cite([q for q in candidate.quotes(self.tz, prefix=candidate.log).split("\n")
                       if q], candidate.provenance(self.tz))  # fmt: skip
            if before is None:
                # Which lines and dates each fact rests on is in the body, line by line.
                fields = {**self._fields(candidate), "type": people.PERSON_TYPE, "about": person}
                fields["actors"] = person
                fields.pop("evidence", None)
                fields.pop("dates", None)
                try:
                    entry = await memories.create(
                        Kind.KNOWLEDGE,
                        name,
                        description=people.description(person, self.lang),
                        body=body.render(),
                        fields=fields,
                    )
                except Conflict as exc:
                    twin = exc.extra.get("name")
                    if isinstance(twin, str) and twin.casefold() == name.casefold():
                        name = twin  # made meanwhile, or by a person in another case
                        continue  # (About-Wendy): read it and add to it
                    raise  # the name is held otherwise (a folder without its file)
                self.ledger.add_created(ItemRef(Kind.KNOWLEDGE, entry.name, str(entry.path)))
                return "added"
            update = {"source": candidate.log}
            try:
                entry = await memories.update(
                    Kind.KNOWLEDGE, name, body=body.render(), fields=update, if_match=before.etag
                )
            except PreconditionFailed:
                continue
            self.ledger.add_updated(ItemRef(Kind.KNOWLEDGE, entry.name, str(entry.path)))
            return outcome
        raise PreconditionFailed(f"knowledge {name!r} kept changing; try again")

    async def profile_line(self, candidate: Candidate) -> str:
        """Add the candidate as one line of a profile: the log's own user's for about_user
        (never another user's), about_me for about_agent. The outcome: ``added``,
        ``duplicate`` (known, or not a line for a profile) or ``profile_refused`` (the
        identity gate refused it: an instruction, or pasted text)."""
        if candidate.kind == "about_agent":
            if dreamer_role_phrase(candidate.text) is not None:
                return "duplicate"
            name, user = SELF_PROFILE, None
        else:
            user = candidate.user
            name = await self.tools.edits.profile_name(user)  # as the prompt reads it
            if name == SELF_PROFILE:
                return "duplicate"
        if user is None:
            description = (
                "智能体的自我认知与人格画像" if self.lang == "zh" else "The agent's view of itself"
            )
            defaults: dict[str, Any] = {"type": "identity"}
        else:
            description = f"用户 {user} 的画像" if self.lang == "zh" else f"Profile of user {user}"
            defaults = {"user_id": user, "type": "identity"}
        when = candidate.when
        line = f"- {candidate.text}{f' ({when.astimezone(self.tz).date()})' if when else ''}"
        for _ in range(RETRIES):
            try:
                before: Entry | None = await self.tools.memories.get(Kind.PROFILE, name)
            except NotFound:
                before = None
            lines = before.body.rstrip("\n").split("\n") if before and before.body.strip() else []
            if any(restates(candidate.text, _said(ln)) for ln in lines):
                return "duplicate"
            if before is not None and sum(1 for ln in lines if ln.strip()) >= MAX_PROFILE_LINES:
                why = f"the profile holds {MAX_PROFILE_LINES} lines: tidy it by hand for more"
                refusal = Refusal(candidate.text, why)
                self.ledger.add_refused_profile(name, str(before.path), [refusal], False)
                return "profile_refused"
            try:
                entry = await self.tools.edits.write_profile(
                    name,
                    "\n".join([*lines, line]),
                    description=description,
                    defaults=defaults,
                    strict=True,
                    if_match=before.etag if before else "",
                )
            except ProfileRefused:
                return "profile_refused"
            except PreconditionFailed:
                continue  # a person's edit meanwhile: read again, added to as it is now
            name_of = "about_me" if user is None else f"user {name}"
            self.ledger.add_profile(f"{name_of} ({entry.path})")
            return "added"
        raise PreconditionFailed(f"profile {name!r} kept changing; try again")


def _said(line: str) -> str:
    """A profile line's own words: its bullet and the day a dream wrote after it left out
    (the day's numbers made a fact said again look new)."""
    found = _PROFILE_LINE.match(line)
    return found["text"] if found else line


def _merged(target: Entry, candidate: Candidate, text: str, tz: dt.tzinfo) -> tuple[str, str]:
    """A merged entry's body (without its new source line) and description. The old text
    (all but the quotes and sources) gives way to the merged ``text`` only when ``text``
    carries every word of it; else (a person's section, a name the model left out, more
    than the model was shown) it stays whole, as it was, with the candidate's own text after
    it when that says anything more, and so does the old description."""
    old = target.body.split("\n")
    old_quotes = [line for line in old if line.startswith("> ")]
    old_sources = [line for line in old if line.startswith("Source: ")]
    old_text = "\n".join(line for line in old if not line.startswith(("> ", "Source: "))).strip()
    if text and carries(text, old_text):
        lead = text
    elif carries(old_text, candidate.text):
        lead = old_text
    else:
        lead = f"{old_text}\n\n{candidate.text}"
    described = lead == text and carries(text, target.description)
    new_quotes = [q for q in candidate.quotes(tz).split("\n") if q not in old_quotes]
    body = "\n".join([lead, "", *old_quotes, *new_quotes, "", *old_sources])
    return body, first_sentence(text) if described else target.description


def _planned_for(candidate: Candidate, tz: dt.tzinfo) -> dt.datetime | None:
    """When a plan is to happen: the first day it names on or after the day it was said."""
    if candidate.when is None:
        return None
    said = candidate.when.astimezone(tz).date()
    for value in _DAY.findall(" ".join(candidate.dates)):
        day = dt.date.fromisoformat(value)
        if day >= said:
            return dt.datetime.combine(day, dt.time(12), tz)
    return None


def _kind_word(entry: Entry) -> str:
    if entry.kind is Kind.EPISODE:
        return "event"
    if entry.kind is Kind.SKILL:
        return "procedure"
    return entry.entry_type if entry.entry_type in KNOWLEDGE_TYPES else "fact"
