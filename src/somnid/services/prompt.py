"""The resident prompt sections: identity, intentions, discipline — byte-stable.

The same memory gives byte-identical sections (and hashes), so a model provider's prefix
cache stays warm and clients refresh only when a hash changes. Nothing here depends on the
current message except ``cued``: intentions whose cue the message matches, meant for the
per-turn messages, never for the system prompt. Every ``{{`` in memory text is broken up,
because the harness treats ``{{name}}`` in a section as a template variable.
"""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from somnid.config import InjectSettings
from somnid.errors import BrokenFile, InvalidName, NotFound
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.intentions import Agenda, Intention, shown_what
from somnid.memory.kinds import SELF_PROFILE, Kind
from somnid.memory.names import former_name_for, name_for
from somnid.memory.text import one_line
from somnid.services.intentions import Intentions
from somnid.services.prompt_text import PromptText, text_for
from somnid.services.quoting import inline
from somnid.services.recalling import quote
from somnid.store.memories import MemoryStore

MAX_PARTICIPANTS = 10
PARTICIPANT_LINE_CHARS = 80


@dataclass(frozen=True, slots=True)
class Section:
    text: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Sections:
    identity: Section
    intentions: Section
    discipline: Section
    cued: Section


def escape_template(text: str) -> str:
    """``{{x}}`` → ``{ {x} }``: readable, and never a template variable."""
    while "{{" in text or "}}" in text:
        text = text.replace("{{", "{ {").replace("}}", "} }")
    return text


class PromptBuilder:
    def __init__(
        self,
        store: MemoryStore,
        intentions: Intentions,
        clock: Clock,
        inject: InjectSettings,
        lang: str,
    ) -> None:
        self.store = store
        self.intentions = intentions
        self.clock = clock
        self.inject = inject
        self.text: PromptText = text_for(lang)

    async def build(
        self,
        *,
        speaker: str | None = None,
        participants: list[str] | None = None,
        message: str | None = None,
        project: str | None = None,
    ) -> Sections:
        identity = ""
        if self.inject.identity:
            identity = await asyncio.to_thread(self._identity, speaker, participants or [])
        plan = await self.intentions.agenda(message, project)
        intentions = self._intentions(plan) if self.inject.intentions else ""
        cued = self._cued(plan.cued) if self.inject.intentions else ""
        discipline = self.text.discipline if self.inject.discipline else ""
        return Sections(
            Section(escape_template(identity)),
            Section(escape_template(intentions)),
            Section(escape_template(discipline)),
            Section(escape_template(cued)),
        )

    def _user_profile(self, user: str) -> Entry | None:
        """A user's profile (named as :func:`~somnid.memory.names.name_for` names it); the id
        ``about_me`` has none: that name is the agent's own."""
        name = name_for(user)
        if name == SELF_PROFILE:
            return None
        found = self._profile(name)
        former = former_name_for(user)
        if found is None and former is not None and former != SELF_PROFILE:
            kept = self._profile(former)  # written before names were name_for's
            if kept is not None and str(kept.meta.get("user_id", "")).strip() == user.strip():
                return kept
        return found

    def _profile(self, name: str) -> Entry | None:
        try:
            return self.store.read(Kind.PROFILE, name)
        except (NotFound, BrokenFile, InvalidName):
            return None

    def _identity(self, speaker: str | None, participants: list[str]) -> str:
        t = self.text
        parts: list[str] = []
        # Profile text is quoted and names are kept to one line, so no line of a profile can
        # pass for a heading of its own ("## Recall discipline", "## Open intentions").
        me = self._profile(SELF_PROFILE)
        if me is not None and me.body.strip():
            parts.append("\n".join([t.about_me, *self._shown(me.body)]))
        if speaker:
            profile = self._user_profile(speaker)
            if profile is not None:
                name = inline(_shown_name(profile, speaker))
                department = one_line(profile.text_field("department"))
                head = f"{name} ({inline(department)})" if department else name
                parts.append("\n".join([t.speaker, head, *self._shown(profile.body)]))
        lines: list[str] = []
        for user in dict.fromkeys(p for p in participants if p and p != speaker):
            if len(lines) >= MAX_PARTICIPANTS:
                break
            profile = self._user_profile(user)
            if profile is None:
                continue
            name = inline(_shown_name(profile, user))
            first = next((ln.strip() for ln in profile.body.splitlines() if ln.strip()), "")
            lines.append(
                f"- {name}: {inline(first[:PARTICIPANT_LINE_CHARS])}" if first else f"- {name}"
            )
        if lines:
            parts.append(t.participants + "\n" + "\n".join(lines))
        return "\n\n".join(parts)

    def _shown(self, body: str) -> list[str]:
        """A profile's body quoted, cut to ``inject.profile_chars`` at a line's end (within
        a line, at a space, when that would show less than half), with a note of how much
        more there is."""
        body = body.strip()
        limit = self.inject.profile_chars
        if len(body) <= limit:
            return quote(body)
        end = body.rfind("\n", 0, limit + 1)
        if end < limit // 2:  # a long paragraph: cut within it, at a space if there is one
            space = body.rfind(" ", limit // 2, limit + 1)
            end = space if space > 0 else limit
        shown = body[:end].rstrip()
        return [*quote(shown), self.text.cut.format(more=len(body) - len(shown))]

    def _line(self, template: str, intention: Intention) -> str:
        due = intention.due.isoformat() if intention.due else ""
        return template.format(id=intention.id, what=inline(shown_what(intention.what)), due=due)

    def _intentions(self, plan: Agenda) -> str:
        t = self.text
        lines = [self._line(t.due, i) for i in plan.due]
        lines += [self._line(t.upcoming, i) for i in plan.upcoming]
        lines += [self._line(t.someday, i) for i in plan.someday]
        if plan.more:
            lines.append(t.more.format(more=plan.more))
        if not lines:
            return ""
        return "\n".join([t.intentions, t.intentions_rule, *lines])

    def _cued(self, cued: list[Intention]) -> str:
        if not cued:
            return ""
        t = self.text
        return "\n".join([t.cued_heading, t.cued_rule, *(self._line(t.cued, i) for i in cued)])


def _shown_name(profile: Entry, user: str) -> str:
    """A profile's name as a person wrote it (``name: Alice Smith``), else the id the
    client gave: never the file's own name (``Alice-Smith-8ae10dfc``)."""
    written = profile.text_field("name")
    if written and written != profile.name:
        return written
    return profile.text_field("user_id") or user
