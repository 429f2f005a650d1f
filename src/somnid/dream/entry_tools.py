"""The dream tools about memories: find and read them, create, update and archive
knowledge and skills, record episodes, rewrite the profiles.

Names are slugs (a name that is a path is refused, never repaired into one); an existing
live name is refused on create with a pointer to the update tool; archiving never deletes
and never overwrites an earlier archived copy.
"""

from __future__ import annotations

import datetime as dt

from somnid.dream import items
from somnid.dream.guard import dreamer_role_phrase
from somnid.dream.ledger import ItemRef
from somnid.dream.logfiles import cut_tokens
from somnid.dream.similarity import same_details, similarity
from somnid.dream.toolbase import ToolBase, answers_errors
from somnid.errors import InvalidInput
from somnid.memory.clock import to_datetime
from somnid.memory.entry import Entry
from somnid.memory.kinds import SELF_PROFILE, Kind
from somnid.memory.names import name_for
from somnid.store import frontmatter

READABLE = (*items.MEMORY_KINDS, Kind.INTENTION, Kind.PROFILE)
NEAR_DUPLICATE = 0.8
"""Content-word overlap (Jaccard) from which two episodes' ``what`` say the same."""
MAX_PROFILE = 8000
"""The characters of a model's new profile text."""
MAX_PROFILE_KEPT = 32_000
"""With the lines of the old one it leaves out: beyond, a person tidies it."""
_ABOUT_ME = {
    "en": "The agent's view of itself: who it is, its character and manner",
    "zh": "智能体的自我认知与人格画像",
}


class EntryTools(ToolBase):
    @answers_errors
    async def list_items(self, kind: str = "", query: str = "", limit: int = 50) -> str:
        """List memories with their kind, type, score and one-line description. With a
        query, the closest matches by meaning and keywords; without, the strongest first.

        Args:
            kind: knowledge, skill, episode, intention or profile. Empty: knowledge, skills
                and episodes.
            query: What to look for, in a few words or a sentence.
            limit: How many to list (1-100).
        """
        everything = kind.strip().lower() in ("", "all")
        kinds = items.MEMORY_KINDS if everything else items.kinds_of(kind, READABLE)
        limit = min(100, max(1, limit))
        tz = self.clock.tz
        if query.strip() and Kind.PROFILE not in kinds:
            recalled = await self.recaller.find(query, kinds=kinds, limit=limit)
            found = recalled.found
            if not found:
                return f"nothing matches {query!r}"
            lines = [f"{len(found)} entries matching {query!r}, best first:"]
            lines += [items.entry_line(f.entry, tz, f.hit.score) for f in found]
            return "\n".join(lines)
        page = await self.memories.list(kinds, text=query.strip() or None, limit=10_000)
        entries = sorted(page.items, key=lambda e: (-e.vitals(tz).score, e.kind.value, e.name))
        if not entries:
            return "no entries" + (f" matching {query!r}" if query.strip() else "")
        shown = entries[:limit]
        head = f"{len(shown)} of {page.total} entries, strongest first"
        if len(shown) < page.total:
            head += " (give a query or a kind to narrow the list)"
        return "\n".join([head + ":", *(items.entry_line(e, tz) for e in shown)])

    @answers_errors
    async def read_item(self, kind: str, name: str) -> str:
        """Read one memory in full: its front-matter and its body.

        Args:
            kind: knowledge, skill, episode, intention or profile.
            name: Its name, as list_items shows it (for profiles: about_me or a user id).
        """
        wanted = items.kind_of(kind, READABLE)
        slug = items.name_of(name)
        entry = await self.edits.get(wanted, slug)
        document = frontmatter.Document(frontmatter.as_commented(entry.meta), entry.body)
        text, cut = cut_tokens(frontmatter.render(document), self.item_tokens)
        answer = f"{wanted.value} {entry.name} ({entry.path}):\n\n{text}"
        return answer + "\n…(cut here: the entry is longer)" if cut else answer

    @answers_errors
    async def find_similar(self, text: str, kind: str = "", limit: int = 5) -> str:
        """Before creating a memory, find existing ones on the same topic (update those
        instead of creating a duplicate) or ones the new information contradicts.

        Args:
            text: The description or content you are about to store.
            kind: knowledge, skill or episode. Empty: all three.
            limit: How many to show (1-20).
        """
        if not text.strip():
            return "error: text is empty; give the description you are about to store"
        kinds = items.kinds_of(kind, items.MEMORY_KINDS)
        recalled = await self.recaller.find(text, kinds=kinds, limit=min(20, max(1, limit)))
        found = recalled.found
        if not found:
            return "nothing similar: a new entry is fine"
        lines = [
            f"{len(found)} similar entries, closest first. The same topic: update it instead "
            "of creating; a contradiction: correct the one that is wrong."
        ]
        lines += [items.entry_line(f.entry, self.clock.tz, f.hit.score) for f in found]
        return "\n".join(lines)

    # ------------------------------------------------------------------ knowledge and skills

    async def _create(
        self, kind: Kind, name: str, entry_type: str, description: str, body: str, verified: bool
    ) -> str:
        entry = await self.edits.create(
            kind,
            name,
            entry_type=entry_type,
            description=description,
            body=body,
            verified=verified,
        )
        self.ledger.add_created(self._ref(entry))
        score = entry.vitals(self.clock.tz).score
        state = "verified" if verified else "unverified until confirmed"
        return (
            f"created {kind.value} {entry.name!r} (type {entry.entry_type}, score {score:.2f}, "
            f"{state}) at {entry.path}"
        )

    async def _update(
        self,
        kind: Kind,
        name: str,
        description: str,
        body: str,
        stability_delta: int,
        score_delta: float,
        verified: bool | None,
    ) -> tuple[Entry, str]:
        entry, changes = await self.edits.update(
            kind,
            name,
            description=description,
            body=body,
            stability_delta=stability_delta,
            score_delta=score_delta,
            verified=verified,
        )
        self.ledger.add_updated(self._ref(entry))
        return entry, f"updated {kind.value} {entry.name!r}: {', '.join(changes) or 'no change'}"

    @answers_errors
    async def create_knowledge(
        self, name: str, entry_type: str, description: str, body: str, verified: bool = True
    ) -> str:
        """Store a new piece of knowledge: a fact, decision, pitfall or preference. Check
        find_similar first; an existing name is refused (update it instead).

        Args:
            name: A short slug naming the topic, <topic-slug> (lowercase, dashes).
            entry_type: fact, decision, pitfall or preference.
            description: One sentence (at most 300 characters): what it is and when it applies.
            body: The details, values and reasons, in Markdown.
            verified: false for a conclusion not yet confirmed (it starts weaker).
        """
        return await self._create(Kind.KNOWLEDGE, name, entry_type, description, body, verified)

    @answers_errors
    async def update_knowledge(
        self,
        name: str,
        description: str = "",
        body: str = "",
        stability_delta: int = 0,
        score_delta: float = 0.0,
        verified: bool | None = None,
    ) -> str:
        """Change a piece of knowledge: rewrite its description or body to the current
        truth, and strengthen it when it was confirmed or used again. Knowledge marked
        auto_merge: false is kept by a person and refused.

        Args:
            name: Its name.
            description: A new one-sentence description. Empty: keep it.
            body: A new body, replacing the old one entirely. Empty: keep it.
            stability_delta: +1 when confirmed or used on another day.
            score_delta: +0.2 for positive feedback, +0.1 when seen again (-1..1).
            verified: true once an unverified entry is confirmed; false if it became doubtful.
        """
        args = (description, body, stability_delta, score_delta, verified)
        return (await self._update(Kind.KNOWLEDGE, name, *args))[1]

    @answers_errors
    async def create_skill(
        self, name: str, description: str, body: str, verified: bool = True
    ) -> str:
        """Store a new skill: a procedure that was walked through and worked, step by step,
        with its gotchas. An existing name is refused (update it instead).

        Args:
            name: A short slug naming the procedure, <procedure-slug> (lowercase, dashes).
            description: One sentence (at most 300 characters): what it does and when to use it.
            body: The steps in Markdown; mark dangerous steps with ⚠️.
            verified: false when the procedure has not been seen to work yet.
        """
        return await self._create(Kind.SKILL, name, "", description, body, verified)

    @answers_errors
    async def update_skill(
        self,
        name: str,
        description: str = "",
        body: str = "",
        merge_note: str = "",
        stability_delta: int = 0,
        score_delta: float = 0.0,
        verified: bool | None = None,
    ) -> str:
        """Improve a skill: merge new steps or a lesson into its body (send the whole new
        body), or strengthen it after it worked again. Skills marked auto_merge: false are
        kept by a person and refused.

        Args:
            name: Its name.
            description: A new one-sentence description. Empty: keep it.
            body: The complete new body (old steps merged with the new). Empty: keep it.
            merge_note: What was merged and why, for the dream journal.
            stability_delta: +1 when it worked again on another day.
            score_delta: +0.2 for positive feedback (-1..1).
            verified: true once the procedure is confirmed to work.
        """
        note = items.checked_line(merge_note, "merge_note", limit=items.MAX_FIELD, required=False)
        args = (description, body, stability_delta, score_delta, verified)
        entry, answer = await self._update(Kind.SKILL, name, *args)
        if note:
            self.ledger.notes.append(f"skill {entry.name}: {note}")
            answer += f" (merge note kept for the journal: {note})"
        return answer

    @answers_errors
    async def archive_item(self, kind: str, name: str, reason: str) -> str:
        """Move a memory to the archive: when the user asked to forget it, or it proved
        wrong or obsolete. Nothing is deleted; a person can restore it.

        Args:
            kind: knowledge, skill or episode.
            name: Its name.
            reason: Why, in one sentence.
        """
        wanted = items.kind_of(kind, items.MEMORY_KINDS)
        entry = await self.edits.archive(wanted, name, reason)
        live_name = items.name_of(name)
        self.ledger.add_archived(ItemRef(wanted, live_name, str(entry.path)))
        reason_given = entry.text_field("archive_reason")
        return f"archived {wanted.value} {live_name!r} to {entry.path} (reason: {reason_given})"

    # ------------------------------------------------------------------ episodes

    @answers_errors
    async def record_episode(
        self,
        what: str,
        when: str = "",
        actors: str = "",
        outcome: str = "",
        objects: str = "",
        tools: str = "",
        tags: str = "",
        salience: str = "low",
        source: str = "",
        details: str = "",
    ) -> str:
        """Record what happened: a task, request, debugging session, decision, incident or
        delivery, with when, who, how it went and where it came from.

        Args:
            what: One sentence: what happened.
            when: When it happened, as <YYYY-MM-DD>T<HH:MM>: the time the log gives for it.
                Empty: now.
            actors: Who took part, as the log names them: <person>, <person>.
            outcome: How it ended: success, failure, partial, pending, …
            objects: What it was about: files, services, hosts.
            tools: Tools and commands used.
            tags: Comma-separated keywords.
            salience: low (routine), mid (notable) or high (a milestone or serious failure).
            source: The session log it came from: <log name>.
            details: More of the story, in Markdown, if it matters.
        """
        facts = {"actors": actors, "outcome": outcome, "objects": objects, "tools": tools}
        facts |= {"tags": tags, "source": source}
        repeat = await self._repeated_episode(what, when, source)
        if repeat is not None:
            return f"error: {repeat}; record each event once (update it instead if it changed)"
        entry = await self.edits.record_episode(what, details, when, salience, facts)
        self.ledger.add_created(self._ref(entry))
        self.ledger.episodes.append((source.strip(), what))
        score = entry.vitals(self.clock.tz).score
        level = entry.text_field("salience")
        return f"recorded episode {entry.name!r} (salience {level}, score {score:.2f})"

    async def _repeated_episode(self, what: str, when: str, source: str) -> str | None:
        """Why an episode would repeat one already recorded: the same or nearly the same
        ``what`` from the same log in this dream, or an episode with the same when and
        what in memory. None when it is new."""
        for seen_source, seen_what in self.ledger.episodes:
            if seen_source == source.strip() and _near_duplicate(what, seen_what):
                origin = f"log {source.strip()}" if source.strip() else "no source log"
                return f"this dream recorded that episode from {origin} already ({seen_what!r})"
        moment = items.when_of(when, self.clock.tz) if when.strip() else None
        if moment is None:
            return None
        page = await self.memories.list((Kind.EPISODE,), limit=10_000)
        for entry in page.items:
            if entry.meta.get("when") is None or not _near_duplicate(what, entry.description):
                continue
            if _same_moment(entry.meta.get("when"), moment, self.clock.tz):
                return f"episode {entry.name} records that already, at the same time"
        return None

    # ------------------------------------------------------------------ profiles

    def _profile_text(self, content: str) -> str:
        text, _ = items.without_front_matter(content)
        if not text:
            raise InvalidInput("content is empty; give the whole profile text")
        if len(text) > MAX_PROFILE:
            raise InvalidInput(f"content has {len(text)} characters; keep it under {MAX_PROFILE}")
        return text

    @answers_errors
    async def update_about_me(self, content: str) -> str:
        """Rewrite the agent's own profile (who it is, its character, how it works with its
        users), only when conversations really discussed that. It replaces the old text,
        but a line of it your text leaves out is kept.

        Args:
            content: The whole new profile in Markdown, written about the agent.
        """
        text = self._profile_text(content)
        phrase = dreamer_role_phrase(text)
        if phrase is not None:
            return (
                f"error: about_me must describe the agent as its users know it, not this "
                f"consolidation process ({phrase!r}); leave about_me as it is unless the "
                "conversations discussed the agent's identity"
            )
        description = _ABOUT_ME.get(self.lang, _ABOUT_ME["en"])
        entry, kept = await self.edits.rewrite_profile(  # refused by the identity gate: told why
            SELF_PROFILE,
            text,
            description=description,
            defaults={"type": "identity"},
            limit=MAX_PROFILE_KEPT,
        )
        self.ledger.add_profile(f"about_me ({entry.path})")
        return f"updated about_me ({len(text)} characters){_kept(kept)}"

    @answers_errors
    async def update_about_user(self, user_id: str, content: str) -> str:
        """Rewrite what is known about one user: role, preferences, habits, context. Only
        the facts of the user of a log you read in this dream (its user field); it replaces
        the old text, but a line of it your text leaves out is kept.

        Args:
            user_id: The user field of the log the facts come from: <user id>.
            content: The whole new profile in Markdown.
        """
        if user_id.strip() and name_for(user_id.strip()) == SELF_PROFILE:
            return "error: about_me is the agent's own profile, not a user; use update_about_me"
        users = self.ledger.users()
        if not users:
            return "error: read a log first; a profile is written only for the user of a log read"
        raw = user_id.strip() or (users[0] if len(users) == 1 else "")
        if raw not in users:
            given = f"user {raw[:80]!r} is" if raw else "no user_id was given, and that is"
            return (
                f"error: {given} not the user of a log read in this dream; the logs read "
                f"are about: {', '.join(users)}. Write only what a log says about its own user."
            )
        name = await self.edits.profile_name(raw)  # as the prompt reads it
        text = self._profile_text(content)
        description = f"用户 {raw} 的画像" if self.lang == "zh" else f"Profile of user {raw}"
        entry, kept = await self.edits.rewrite_profile(  # refused by the identity gate: told why
            name,
            text,
            description=description,
            defaults={"user_id": raw, "type": "identity"},
            limit=MAX_PROFILE_KEPT,
        )
        self.ledger.add_profile(f"user {name} ({entry.path})")
        return f"updated the profile of user {name} ({len(text)} characters){_kept(kept)}"


def _kept(lines: int) -> str:
    if not lines:
        return ""
    what = (
        "1 line of the old profile your text leaves out was"
        if lines == 1
        else (f"{lines} lines of the old profile your text leaves out were")
    )
    return f"; {what} kept below it (a dream never removes a line: a person does)"


def _near_duplicate(a: str, b: str) -> bool:
    return similarity(a, b) >= NEAR_DUPLICATE and same_details(a, b)


def _same_moment(stored: object, moment: dt.datetime, tz: dt.tzinfo) -> bool:
    """Whether a stored ``when`` is ``moment``, to the minute."""
    when = to_datetime(stored, tz)
    if when is None:
        return False
    return when.astimezone(tz).replace(second=0, microsecond=0) == moment.replace(
        second=0, microsecond=0
    )
