"""What one dream did, counted honestly: the result a caller gets and the journal records.

Every figure is counted where the thing happens (an LLM call, a tool call, a stage answered,
a candidate refused or written), never inferred afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from somnid.dream.llm.base import Usage
from somnid.provenance import DreamRecord

CANDIDATE_OUTCOMES = (
    "proposed",
    "ungrounded",
    "misattributed",
    "vague",
    "scaffolding",
    "copied_example",
    "duplicate",
    "known",
    "added",
    "merged",
    "superseded",
    "unwritable",
    "trimmed",
    "split",
)
"""``proposed`` by the model; refused by somnid as ``ungrounded`` (its words are not in its
evidence, names not counted), ``misattributed`` (the person it names is not the one whose
lines say it, or it joins two people's facts), ``vague`` (it says only that people talked),
``scaffolding`` (it carries a prompt's label or id), or ``copied_example`` (it copies a
prompt's placeholder); a
``duplicate`` of another candidate or of a memory (found by somnid) or ``known`` (the model
decided it adds nothing); written as ``added``, ``merged`` into an entry, or
``superseded`` an entry (archived with a pointer); or ``unwritable``, when the store
refused its one write (a case twin of its name, a file broken by hand, a name a folder
without an entry file holds): that memory is left and the dream goes on. Beside the
outcomes: ``trimmed`` sentences cut from a memory (their lines do not say them, or say
them of someone else) and ``split``, memories beyond the first a proposal became (one per
person it is about)."""


@dataclass(slots=True)
class DreamResult:
    status: str
    reason: str = ""
    trigger: str = ""
    mode: str = ""
    started: str | None = None
    finished: str | None = None
    seconds: float = 0.0
    logs: list[str] = field(default_factory=list)
    processed: list[str] = field(default_factory=list)
    skipped_logs: list[str] = field(default_factory=list)
    """Logs marked ``dream: false``: archived without a model ever seeing them."""
    passed_by: dict[str, str] = field(default_factory=dict)
    """Pending logs this dream passed by until they change, with why (dream.passed_by)."""
    pending_after: int = 0
    """Logs still pending for a dream when this one ended."""
    created: int = 0
    updated: int = 0
    archived: int = 0
    decayed: int = 0
    retired: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    llm_calls: int = 0
    tool_calls: int = 0
    """Agentic mode: tools the model called (refused calls included)."""
    stages: int = 0
    """Pipeline mode: structured answers somnid asked for and got (extractions, decisions)."""
    failed_stages: int = 0
    """Pipeline mode: answers still unusable after one repair (their logs stay pending)."""
    iterations: int = 0
    """Agentic mode: rounds of the loop."""
    candidates: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CANDIDATE_OUTCOMES, 0))
    journal: str | None = None
    summary: str = ""

    def count(self, outcome: str, by: int = 1) -> None:
        self.candidates[outcome] = self.candidates.get(outcome, 0) + by

    def add_abandoned(self, prompt_tokens: int) -> None:
        """A request given up on (timed out): its prompt, estimated, is counted as spent
        (``tokens.abandoned`` and the total), since the server read it all the same."""
        self.llm_calls += 1
        self.tokens["abandoned"] = self.tokens.get("abandoned", 0) + prompt_tokens
        self.tokens["prompt"] = self.tokens.get("prompt", 0) + prompt_tokens
        self.tokens["total"] = self.tokens.get("total", 0) + prompt_tokens

    def add_usage(self, usage: Usage) -> None:
        self.llm_calls += 1
        tokens = self.tokens
        tokens["prompt"] = tokens.get("prompt", 0) + usage.prompt_tokens
        tokens["completion"] = tokens.get("completion", 0) + usage.completion_tokens
        tokens["cached"] = tokens.get("cached", 0) + usage.cached_tokens
        tokens["total"] = tokens["prompt"] + tokens["completion"]

    def record(self) -> DreamRecord:
        """What the history commits the dream with."""
        return DreamRecord(
            trigger=self.trigger,
            status=self.status,
            reason=self.reason,
            created=self.created,
            updated=self.updated,
            archived=self.archived,
            decayed=self.decayed,
            retired=self.retired,
            profiles=self.candidates.get("profile", 0),
            profiles_refused=self.candidates.get("profile_refused", 0),
            processed=tuple(self.processed),
            journal=self.journal,
        )
