"""Bodies of the prompt, tool and intention routes."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from somnid.api.schemas.common import Id, Schema


class PromptRequest(Schema):
    speaker_user_id: Id | None = None
    participant_user_ids: list[Id] = Field(default_factory=list, max_length=100)
    current_message: str | None = Field(None, max_length=20_000)
    project: Id | None = None


class SectionOut(Schema):
    text: str
    hash: str = Field(description="Changes exactly when the text changes.")


class PromptResponse(Schema):
    identity: SectionOut
    intentions: SectionOut
    discipline: SectionOut
    cued: SectionOut = Field(
        description="Intentions the current message brings to mind: per-turn material for "
        "a message before the step, never for the (cached) system prompt."
    )


class ToolOut(Schema):
    name: str
    description: str
    parameters: dict[str, Any]
    concurrent: bool = Field(description="May run beside other tool calls.")


class ToolList(Schema):
    tools: list[ToolOut]


class ToolCall(Schema):
    args: dict[str, Any] = Field(default_factory=dict)
    session_id: Id | None = None
    user_id: Id | None = None
    project: Id | None = None


class ToolResult(Schema):
    result: str
    is_error: bool = Field(
        False,
        description="True when the answer says the call failed in substance (e.g. no such "
        "open intention): the text says why; report it to the model as an error.",
    )


class IntentionIn(Schema):
    what: str = Field(min_length=1, max_length=2000)
    due: str | None = Field(
        None,
        max_length=40,
        description="YYYY-MM-DD",
        # Swagger's "Try it out" filled in "string" and the call was refused. (No
        # ``format: date``: an empty due, none, is taken too.)
        json_schema_extra={"examples": ["2026-12-31"]},
    )
    cue: str | None = Field(None, max_length=500, description="Comma-separated keywords")
    priority: str = Field("mid", pattern="^(low|mid|medium|high)$")
    source: Id | None = None
    project: Id | None = None


class IntentionOut(Schema):
    id: str
    what: str
    due: str | None
    cue: list[str]
    priority: str
    status: str
    path: str


class IntentionList(Schema):
    items: list[IntentionOut]


class CompactedResponse(Schema):
    forgotten: bool
