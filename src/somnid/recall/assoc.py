"""Associative hints (System 1): a memory surfaces unasked when a cue clearly calls for it.

Gate: candidates are recall results scoring at least ``threshold`` that this session has not
been shown. One clear winner (ahead of the runner-up by ``gap``) → one hint; exactly two too
close to separate → both (if ``max_items`` ≥ 2); three or more too close → nothing, since an
ambiguous cue is better met with silence. Habituation is per session id, bounded (LRU).
No hint at all while the vector index is empty or still filling: keyword scores alone are
too noisy to interrupt with.
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass
from typing import Any

from somnid.config import AssocSettings
from somnid.memory.kinds import Kind
from somnid.memory.text import valid_text
from somnid.recall.engine import Hit, Recall

HINT_KINDS = (Kind.KNOWLEDGE, Kind.SKILL, Kind.EPISODE)
TOP_K = 3
MIN_CUE_CHARS = 8
MAX_CUE_CHARS = 600
CUE_ARG_KEYS = ("command", "cmd", "query", "url", "file_path", "path", "pattern")
MEMORY_TOOLS = frozenset(
    {
        "recall_memories",
        "search_knowledge",
        "search_episodes",
        "search_recent_conversation",
        "list_intentions",
        "add_intention",
        "complete_intention",
        "cancel_intention",
        "dream_now",
    }
)


@dataclass(frozen=True, slots=True)
class Decision:
    items: list[Hit]
    reason: str  # fired | below | habituated | ambiguous | silent | skipped


def gate(hits: list[Hit], seen: set[str], threshold: float, gap: float, max_items: int) -> Decision:
    """The gate itself, pure: which of ``hits`` (best first) to show."""
    passed = [hit for hit in hits if hit.score >= threshold]
    if not passed:
        return Decision([], "below")
    fresh = [hit for hit in passed if hit.path not in seen]
    if not fresh:
        return Decision([], "habituated")
    if len(fresh) == 1 or fresh[0].score - fresh[1].score >= gap:
        return Decision(fresh[:1], "fired")
    if max_items >= 2 and (len(fresh) == 2 or fresh[1].score - fresh[2].score >= gap):
        return Decision(fresh[:2], "fired")  # two too close: both (a third far behind)
    return Decision([], "ambiguous")


def action_cue(tool: str, args: dict[str, Any]) -> str:
    """The cue of a tool call: its most telling argument alone (a shell tool's name would
    pull up every shell memory), else the name with its arguments."""
    for key in CUE_ARG_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return valid_text(value.strip())
    if not args:
        return valid_text(tool)
    return valid_text(
        f"{tool}: {json.dumps(args, ensure_ascii=False, separators=(',', ':'), default=str)}"
    )


def estimate_tokens(text: str) -> int:
    """Rough token count: one per CJK character, one per four other characters."""
    cjk = sum(1 for ch in text if "\u3400" <= ch <= "\u9fff")
    return cjk + (len(text) - cjk + 3) // 4


@dataclass(frozen=True, slots=True)
class HintItem:
    hit: Hit
    description: str


class Habituation:
    """What each session has been shown; the least recently active sessions are forgotten."""

    def __init__(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._seen: collections.OrderedDict[str, set[str]] = collections.OrderedDict()

    def seen(self, session_id: str) -> set[str]:
        shown = self._seen.get(session_id)
        if shown is None:
            shown = set()
            self._seen[session_id] = shown
            while len(self._seen) > self.max_sessions:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(session_id)
        return shown

    def reset(self, session_id: str) -> bool:
        return self._seen.pop(session_id, None) is not None

    def __len__(self) -> int:
        return len(self._seen)


@dataclass(slots=True)
class AssocStats:
    fired: int = 0
    below: int = 0
    habituated: int = 0
    ambiguous: int = 0
    silent: int = 0
    skipped: int = 0


class Associator:
    def __init__(self, recall: Recall, settings: AssocSettings, lang: str) -> None:
        self.recall = recall
        self.settings = settings
        self.lang = lang
        self.habituation = Habituation(settings.max_sessions)
        self.stats = AssocStats()

    def evaluate(self, hits: list[Hit], seen: set[str] | None = None) -> Decision:
        s = self.settings
        return gate(hits, seen or set(), s.threshold, s.gap, s.max_items)

    async def thought(self, session_id: str, cue: str, project: str | None = None) -> Decision:
        if not self.settings.enabled or not self.settings.pre_step:
            return self._count(Decision([], "skipped"))
        return await self._associate(session_id, cue, project)

    async def action(
        self, session_id: str, tool: str, args: dict[str, Any], project: str | None = None
    ) -> Decision:
        if not self.settings.enabled or not self.settings.post_execute or tool in MEMORY_TOOLS:
            return self._count(Decision([], "skipped"))
        return await self._associate(session_id, action_cue(tool, args), project)

    def reset(self, session_id: str) -> bool:
        return self.habituation.reset(session_id)

    async def _associate(self, session_id: str, cue: str, project: str | None) -> Decision:
        cue = cue.strip()[:MAX_CUE_CHARS]
        if len(cue) < MIN_CUE_CHARS or not self.recall.vectors_ready or not self.recall.filled:
            return self._count(Decision([], "silent"))
        hits = await self.recall.search(cue, kinds=HINT_KINDS, limit=TOP_K, project=project)
        seen = self.habituation.seen(session_id)
        decision = self.evaluate(hits, seen)
        seen.update(hit.path for hit in decision.items)
        return self._count(decision)

    def _count(self, decision: Decision) -> Decision:
        setattr(self.stats, decision.reason, getattr(self.stats, decision.reason) + 1)
        return decision
