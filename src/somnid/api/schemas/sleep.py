"""Bodies of the sleep and activity routes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from somnid.api.schemas.common import Schema


class SleepRun(Schema):
    trigger: str = Field("manual", max_length=100)
    wait: bool = Field(
        False, strict=True, description="Answer when the dream is over instead of at once."
    )


class DreamResultOut(Schema):
    status: str = Field(
        description="deep_sleep, maintenance, skipped, interrupted or error. A dream that "
        "processed none of the logs it was given is interrupted, never deep_sleep."
    )
    reason: str
    trigger: str
    mode: str = Field(description="pipeline or agentic (dream.mode)")
    started: str | None
    finished: str | None
    seconds: float = Field(description="How long the dream took.")
    logs: list[str] = Field(description="The logs this dream was given, oldest first.")
    processed: list[str] = Field(description="Those it consolidated and archived.")
    skipped_logs: list[str] = Field(
        description="Logs marked dream: false, archived as processed without a model seeing them."
    )
    passed_by: dict[str, str] = Field(
        description="Pending logs this dream passed by, with why: one that holds no turn "
        "somnid can read, or one the model refused or answered unusably in three dreams that "
        "consolidated other logs. Each waits until it changes (a person's edit) or the daemon "
        "restarts."
    )
    pending_after: int = Field(
        description="Logs a dream may read still waiting when it ended: closed, not marked "
        "`dream: false`. The sleep status's pendingLogs counts every pending log, an open one "
        "(its session goes on) too."
    )
    created: int
    updated: int
    archived: int
    decayed: int
    retired: int
    tokens: dict[str, int] = Field(description="prompt, completion, cached and total tokens.")
    llm_calls: int = Field(description="Chat requests answered by the LLM.")
    tool_calls: int = Field(description="agentic: tool calls the model made.")
    stages: int = Field(description="pipeline: structured answers asked for and accepted.")
    failed_stages: int = Field(
        description="pipeline: answers still unusable after one repair (their logs stay pending)."
    )
    iterations: int = Field(description="agentic: rounds of the tool loop.")
    candidates: dict[str, int] = Field(
        description="pipeline: memories proposed, refused (ungrounded: its lines do not "
        "say it; misattributed: about another person than the one whose lines say it; vague; "
        "scaffolding: a prompt's label or id; copied_example), deduplicated (duplicate, "
        "known), written (added, merged, superseded) or refused by the store (unwritable: "
        "a case twin, a file broken by hand); besides, trimmed (sentences cut "
        "from a memory) and split (memories beyond the first a proposal became, one per "
        "person)."
    )
    journal: str | None
    summary: str


class SleepRunResponse(Schema):
    started: bool
    sleeping: bool
    result: DreamResultOut | None = None


class CancelResponse(Schema):
    cancelled: bool


class LlmStatus(Schema):
    status: str
    detail: str | None


class SleepStatus(Schema):
    sleeping: bool
    trigger: str | None
    since: str | None
    pending_logs: int
    passed_by: dict[str, str] = Field(
        description="Of the pending logs, those dreams pass by until they change, with why "
        "(see DreamResultOut.passedBy): not counted towards dream.min_pending_logs."
    )
    llm: LlmStatus
    last_dream: DreamResultOut | None
    next_eligible: str | None
    eligibility: str


class ActivityReport(Schema):
    host_id: str = Field(min_length=1, max_length=200)
    agent_id: str = Field(min_length=1, max_length=200)
    status: Literal["running", "idle"]


class ActivityResponse(Schema):
    interrupted: bool = Field(description="A dream was running and was stopped.")
