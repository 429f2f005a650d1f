"""The writes a dream makes, with the original's arithmetic and somnid's safety.

Every write goes through :class:`MemoryService` (serialised, atomic, indexed). Numbers are
read-modify-written with ``If-Match``: a recall reinforcing the same entry meanwhile makes
the update read again instead of losing either change. Refusals raise :class:`SomnidError`
subclasses whose detail tells a model what to do instead.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from somnid.dream import items
from somnid.dream.profile_gate import ProfileGate, ProfileRefused
from somnid.dream.similarity import carries, content_words
from somnid.errors import BrokenFile, Conflict, InvalidInput, NotFound, PreconditionFailed
from somnid.memory.clock import Clock
from somnid.memory.entry import Entry
from somnid.memory.kinds import SELF_PROFILE, Kind
from somnid.memory.lifecycle import MAX_STABILITY, clamp_score
from somnid.memory.names import former_name_for, name_for
from somnid.services.memories import MemoryService

RETRIES = 5


class MemoryEdits:
    def __init__(
        self, memories: MemoryService, clock: Clock, gate: ProfileGate | None = None
    ) -> None:
        self.memories = memories
        self.clock = clock
        self.gate = gate
        """Every profile change passes it first (somnid.dream.profile_gate)."""

    async def missing(self, kind: Kind, name: str) -> str:
        """Why ``(kind, name)`` is not there, and where to look instead."""
        memories = self.memories
        for other in items.MEMORY_KINDS:
            if other is not kind and await memories.exists(other, name):
                return (
                    f"no {kind.value} named {name!r}, but a {other.value} has that name "
                    f"(use kind={other.value} or the {other.value} tools)"
                )
        if await memories.exists(kind, name, archived=True):
            return f"{kind.value} {name!r} is archived; archived entries are not changed"
        return f"no {kind.value} named {name!r}; find names with find_similar or list_items"

    async def get(self, kind: Kind, name: str) -> Entry:
        try:
            return await self.memories.get(kind, name)
        except NotFound:
            raise NotFound(await self.missing(kind, name)) from None

    async def create(
        self,
        kind: Kind,
        name: str,
        *,
        entry_type: str,
        description: str,
        body: str,
        verified: bool,
    ) -> Entry:
        slug = items.name_of(name)
        fields: dict[str, Any] = {"verified": verified}
        if entry_type.strip():
            fields["type"] = items.checked_line(entry_type, "entry_type", limit=40).lower()
        try:
            return await self.memories.create(
                kind,
                slug,
                description=items.checked_line(description, "description"),
                body=items.body_of(body),
                fields=fields,
            )
        except Conflict:
            tool = "update_knowledge" if kind is Kind.KNOWLEDGE else "update_skill"
            raise Conflict(
                f"a {kind.value} named {slug!r} exists already; change it with "
                f'{tool}(name="{slug}", …) or choose another name'
            ) from None

    async def update(
        self,
        kind: Kind,
        name: str,
        *,
        description: str,
        body: str,
        stability_delta: int,
        score_delta: float,
        verified: bool | None,
        if_match: str | None = None,
    ) -> tuple[Entry, list[str]]:
        """Replace the description and body given, move the numbers by the deltas
        (stability ≥ 0, score within 0..1; a positive stability delta is a use: last_used
        moves to now). Returns the entry and what changed. ``if_match``: the version the
        body was made from; another is PreconditionFailed (never written over)."""
        slug = items.name_of(name)
        line = items.checked_line(description, "description", required=False)
        text = items.body_of(body)
        if not (line or text.strip() or stability_delta or score_delta or verified is not None):
            raise InvalidInput("nothing to change: give a description, a body, a delta or verified")
        if not -1.0 <= score_delta <= 1.0 or not -10 <= stability_delta <= 10:
            raise InvalidInput("score_delta must be within -1..1 and stability_delta -10..10")
        for _ in range(RETRIES):
            before = await self.get(kind, slug)
            if if_match is not None and before.etag != if_match:
                raise PreconditionFailed(f"{kind.value} {slug!r} changed meanwhile")
            if items.merge_refused(before):
                raise _kept_by_a_person(kind, slug)
            fields, changes = self._numbers(before, stability_delta, score_delta, verified)
            changes[:0] = [part for part, given in (("description", line), ("body", text)) if given]
            new_body = text if text.strip() else None
            if verified is True and items.pending_banner(new_body or before.body):
                new_body = items.without_banner(new_body or before.body)  # the original's mark
            try:
                entry = await self.memories.update(
                    kind,
                    slug,
                    description=line or None,
                    body=new_body,
                    fields=fields or None,
                    if_match=before.etag,
                )
            except PreconditionFailed:
                continue  # changed meanwhile (a recall reinforced it): read it again
            return entry, changes
        raise PreconditionFailed(f"{kind.value} {slug!r} kept changing; try again")

    def _numbers(
        self, before: Entry, stability_delta: int, score_delta: float, verified: bool | None
    ) -> tuple[dict[str, Any], list[str]]:
        vitals = before.vitals(self.clock.tz)
        fields: dict[str, Any] = {}
        changes: list[str] = []
        if stability_delta:
            stability = min(MAX_STABILITY, max(0, vitals.stability + stability_delta))
            fields["stability"] = stability
            changes.append(f"stability {vitals.stability}→{stability}")
            if stability_delta > 0:
                fields["last_used"] = self.clock.now()
        if score_delta:
            score = round(clamp_score(vitals.score + score_delta), 4)
            fields["score"] = score
            changes.append(f"score {vitals.score:.2f}→{score:.2f}")
        if verified is True and items.unverified(before):
            fields["verified"] = None  # removes the key: verified is the default
            changes.append("now verified")
        elif verified is False and not items.unverified(before):
            fields["verified"] = False
            changes.append("now unverified")
        return fields, changes

    async def archive(self, kind: Kind, name: str, reason: str) -> Entry:
        slug = items.name_of(name)
        why = items.checked_line(reason, "reason")
        if items.merge_refused(await self.get(kind, slug)):
            raise _kept_by_a_person(kind, slug)
        try:
            return await self.memories.archive(kind, slug, reason=why)
        except NotFound:
            raise NotFound(await self.missing(kind, slug)) from None

    async def record_episode(
        self, what: str, details: str, when: str, salience: str, fields: dict[str, str]
    ) -> Entry:
        """A new episode named ``ep-YYYYMMDD-HHMMSS`` (never a caller's text: a source that
        is a path names nothing here); its facts go into the front-matter."""
        meta: dict[str, Any] = {"salience": items.salience_of(salience)}
        moment = items.when_of(when, self.clock.tz)
        if moment is not None:
            meta["when"] = moment
        for key, value in fields.items():
            if key == "tags":
                value = items.tags_of(value)
            line = items.checked_line(value, key, limit=items.MAX_FIELD, required=False)
            if line:
                meta[key] = line
        return await self.memories.create(
            Kind.EPISODE,
            None,
            description=items.checked_line(what, "what"),
            body=items.body_of(details, "details"),
            fields=meta,
        )

    async def profile_name(self, user: str) -> str:
        """The name of ``user``'s profile: :func:`~somnid.memory.names.name_for`'s, or the
        one it was kept under before (its slug) while that one is this user's."""
        name = name_for(user)
        former = former_name_for(user)
        if (
            former is None
            or former == SELF_PROFILE
            or await self.memories.exists(Kind.PROFILE, name)
        ):
            return name
        try:
            kept = await self.memories.get(Kind.PROFILE, former)
        except (NotFound, BrokenFile):
            return name
        same = str(kept.meta.get("user_id", "")).strip() == user.strip()
        return former if same else name

    async def write_profile(
        self,
        name: str,
        text: str,
        *,
        description: str,
        defaults: dict[str, Any],
        strict: bool = False,
        if_match: str | None = None,
    ) -> Entry:
        """Replace a profile's body, keeping every front-matter key it has; ``defaults``
        are added where missing. A missing profile is created. The lines added pass the
        identity gate first; when it refuses them all nothing is written: ``strict`` raises
        :class:`ProfileRefused`, else the profile is returned as it is. ``if_match``: the
        version ``text`` was made from (its etag, or "" for none): another is
        PreconditionFailed (a person's edit meanwhile is never written over)."""
        if self.gate is not None:
            try:
                before: Entry | None = await self.memories.get(Kind.PROFILE, name)
            except NotFound:
                before = None
            try:
                text = await self.gate.admit(name, before.body if before else "", text)
            except ProfileRefused:
                if strict:
                    raise
                return before or _unwritten(name, self.gate.path_of(name))
        now = self.clock.now()
        changed = PreconditionFailed(f"profile {name!r} changed meanwhile")
        for _ in range(RETRIES):
            try:
                before = await self.memories.get(Kind.PROFILE, name)
            except NotFound:
                if if_match:
                    raise changed from None
                try:
                    return await self.memories.create(
                        Kind.PROFILE,
                        name,
                        description=description,
                        body=text,
                        fields={**defaults, "updated": now},
                    )
                except Conflict as exc:
                    if exc.extra.get("name") != name:
                        raise  # a user whose id differs only in case: not this user's
                    if if_match is not None:
                        raise changed from None
                    continue  # created meanwhile: update it instead
            if if_match is not None and before.etag != if_match:
                raise changed
            fields = {key: value for key, value in defaults.items() if key not in before.meta}
            fields["updated"] = now
            try:
                return await self.memories.update(
                    Kind.PROFILE, name, body=text, fields=fields, if_match=before.etag
                )
            except (PreconditionFailed, NotFound):
                if if_match is not None:
                    raise changed from None
                continue
        raise PreconditionFailed(f"profile {name!r} kept changing; try again")

    async def rewrite_profile(
        self, name: str, text: str, *, description: str, defaults: dict[str, Any], limit: int
    ) -> tuple[Entry, int]:
        """A model's whole new profile text, without dropping a line of the old: a line
        ``text`` does not carry (every content word, negations counted; a line of none, as
        written) is kept, below it (a person's note, a fact the model left out; the newest
        first, as the prompt may show only the top). The entry and how many lines were
        kept. Over ``limit`` characters with them: InvalidInput, nothing written."""
        for _ in range(RETRIES):
            try:
                before: Entry | None = await self.memories.get(Kind.PROFILE, name)
            except NotFound:
                before = None
            kept = kept_lines(before.body if before else "", text)
            whole = "\n".join([text, "", *kept]) if kept else text
            if len(whole) > limit:
                raise InvalidInput(
                    f"with the {len(kept)} lines of the profile your text leaves out (a dream"
                    f" never removes one) it would have {len(whole)} characters, over {limit}:"
                    " a person must tidy it; leave it as it is"
                )
            try:
                entry = await self.write_profile(
                    name,
                    whole,
                    description=description,
                    defaults=defaults,
                    strict=True,
                    if_match=before.etag if before else "",
                )
            except PreconditionFailed:
                continue  # a person's edit meanwhile: kept as it is now
            return entry, len(kept)
        raise PreconditionFailed(f"profile {name!r} kept changing; try again")


def kept_lines(old: str, text: str) -> list[str]:
    """The lines of ``old`` that ``text`` does not carry, in their order: blank ones go, and
    one of no content word (``Is a PM.``, a fence, a table's rule) only if ``text`` has it."""
    said = {" ".join(line.split()) for line in text.splitlines()}
    return [
        line
        for line in old.splitlines()
        if line.strip()
        and (
            not carries(text, line)
            or (not content_words(line) and " ".join(line.split()) not in said)
        )
    ]


def _kept_by_a_person(kind: Kind, slug: str) -> Conflict:
    """An entry with ``auto_merge: false``: neither changed nor archived by a dream."""
    return Conflict(
        f"{kind.value} {slug!r} has auto_merge: false: a person keeps it; leave it as it is "
        "and note the lesson in write_dream_log"
    )


def _unwritten(name: str, path: str) -> Entry:
    """A profile that does not exist and was not written (its only lines were refused)."""
    return Entry(Kind.PROFILE, name, False, {}, "", PurePosixPath(path), "", 0.0)
