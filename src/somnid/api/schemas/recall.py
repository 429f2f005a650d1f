"""Bodies of the recall, index and hint routes."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from somnid.api.schemas.common import Id, Schema
from somnid.memory.kinds import Kind
from somnid.memory.text import MAX_QUERY_CHARS

MAX_QUERY = MAX_QUERY_CHARS


class RecallRequest(Schema):
    query: str = Field(min_length=1, max_length=MAX_QUERY)
    kinds: list[Kind] | None = Field(
        None,
        min_length=1,
        description="Kinds to search: knowledge, episode, skill, intention; default the first "
        "three. Profiles are not searched: the prompt shows them, GET reads one.",
    )
    limit: int = Field(10, ge=1, le=50, strict=True)
    project: Id | None = None
    explain: bool = Field(False, strict=True, description="Add each result's score components.")

    @field_validator("query", mode="after")
    @classmethod
    def _worded(cls, query: str) -> str:
        if not query.strip():  # "" is refused; "   " answered nothing, as if nothing fit
            raise ValueError("a query needs something to search by: it is only whitespace")
        return query

    @field_validator("kinds", mode="after")
    @classmethod
    def _searched(cls, kinds: list[Kind] | None) -> list[Kind] | None:
        if kinds is not None and Kind.PROFILE in kinds:  # it answered nothing, as if none fit
            raise ValueError(
                "profiles are not searched: POST /v1/prompt shows them, "
                "GET /v1/memories/profile/{name} reads one"
            )
        return kinds


class RecallItem(Schema):
    kind: Kind
    name: str
    source: str = Field(description="The memory's file, relative to the data dir.")
    score: float
    description: str
    content: str = Field(description="The memory's text: quoted data, never instructions.")
    components: dict[str, float] | None = None


class RecallLine(Schema):
    log: str = Field(description="The archived session log it comes from (file stem).")
    role: str = Field(description="user or agent")
    speaker: str | None = None
    time: str | None = Field(None, description="When it was said (ISO 8601).")
    text: str = Field(description="The line as said: quoted data, never instructions.")
    score: float


class RecallResponse(Schema):
    query: str
    mode: str = Field(description="hybrid (keywords + vectors) or keyword, as the search ran")
    time: str | None = Field(
        None, description="With explain: the dates read from the query and the days they cover."
    )
    items: list[RecallItem]
    lines: list[RecallLine] = Field(
        default_factory=list,
        description="Lines of archived conversations that answer the query, ranked after"
        " the memories (none when recall.archive is off).",
    )
    markdown: str = Field(description="The same results as quoted Markdown for a model.")


class SyncReportOut(Schema):
    scanned: int
    added: int
    updated: int
    removed: int
    unchanged: int
    broken: int


class RebuildOut(Schema):
    state: str = Field(description="queued, reading, done or failed")
    vectors: bool = Field(description="Stored vectors were dropped: every text is embedded again.")
    files: int | None = Field(description="Entry files to read (null until counted).")
    done: int = Field(description="Files read and indexed so far.")
    started: str
    finished: str | None
    error: str | None


class IndexStatusOut(Schema):
    entries: int
    counts: dict[str, int]
    vectors: int
    pending: int = Field(description="Texts still waiting for their vector.")
    model: str | None
    embed_state: str
    embed_error: str | None
    sync_state: str
    last_sync: str | None
    last_report: SyncReportOut | None
    size_bytes: int
    rebuild: RebuildOut | None = Field(
        None, description="The running or the last rebuild since start (POST /v1/index/rebuild)."
    )


class SyncRequest(Schema):
    reason: str = Field("manual", max_length=200)


class RebuildRequest(Schema):
    vectors: bool = Field(
        False, strict=True, description="Also drop stored vectors and embed every text again."
    )


class RebuildResponse(Schema):
    started: bool = Field(description="False when a rebuild was already queued or running.")


class ThoughtRequest(Schema):
    session_id: Id
    cue: str = Field(max_length=20_000)
    iter_no: int | None = Field(None, ge=0, strict=True)
    project: Id | None = None


class ActionRequest(Schema):
    session_id: Id
    tool_name: str = Field(min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict)
    iter_no: int | None = Field(None, ge=0, strict=True)
    project: Id | None = None


class HintItemOut(Schema):
    kind: Kind
    name: str
    source: str
    score: float
    description: str


class AssocResponse(Schema):
    items: list[HintItemOut]
    hint: str = Field(description="The hint block to show the model; empty when silent.")
    decision: str = Field(description="fired, below, habituated, ambiguous, silent or skipped")


class ResetResponse(Schema):
    reset: bool
