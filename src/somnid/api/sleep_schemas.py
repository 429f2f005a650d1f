"""Bodies of the sleep and activity routes."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from somnid.api.schemas import Schema


class SleepRun(Schema):
    trigger: str = Field("manual", max_length=100)
    wait: bool = Field(
        False, strict=True, description="Answer when the dream is over instead of at once."
    )


class DreamResultOut(Schema):
    status: str = Field(description="deep_sleep, maintenance, skipped, interrupted or error")
    reason: str
    trigger: str
    started: str | None
    finished: str | None
    logs: list[str]
    processed: list[str]
    skipped_logs: list[str] = Field(
        description="Logs marked dream: false, archived as processed without a model seeing them."
    )
    created: int
    updated: int
    archived: int
    decayed: int
    retired: int
    tokens: dict[str, int]
    iterations: int
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
