from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, status

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.awake import (
    CompactedResponse,
    IntentionIn,
    IntentionList,
    IntentionOut,
    PromptRequest,
    PromptResponse,
    SectionOut,
    ToolCall,
    ToolList,
    ToolOut,
    ToolResult,
)
from somnid.api.schemas.common import Id
from somnid.memory.intentions import Intention
from somnid.services.prompt import Section
from somnid.tools.memory_tools import ToolContext

router = APIRouter(tags=["awake"])

SessionId = Annotated[str, Path(alias="sessionId", min_length=1, max_length=200)]


def _section(section: Section) -> SectionOut:
    return SectionOut(text=section.text, hash=section.hash)


def _intention(intention: Intention) -> IntentionOut:
    return IntentionOut(
        id=intention.id,
        what=intention.what,
        due=intention.due.isoformat() if intention.due else None,
        cue=list(intention.cue),
        priority=intention.priority,
        status=intention.status,
        path=intention.path,
    )


@router.post("/v1/prompt", name="buildPrompt", response_model=PromptResponse)
async def build_prompt(body: PromptRequest, runtime: RuntimeDep) -> PromptResponse:
    """The resident prompt sections; byte-identical while memory is unchanged."""
    sections = await runtime.prompt.build(
        speaker=body.speaker_user_id,
        participants=body.participant_user_ids,
        message=body.current_message,
        project=body.project,
    )
    return PromptResponse(
        identity=_section(sections.identity),
        intentions=_section(sections.intentions),
        discipline=_section(sections.discipline),
        cued=_section(sections.cued),
    )


@router.get("/v1/tools", name="listTools", response_model=ToolList)
async def list_tools(runtime: RuntimeDep) -> ToolList:
    """The agent's memory tools with JSON schemas made from their Python signatures."""
    return ToolList(
        tools=[
            ToolOut(
                name=spec.name,
                description=spec.description,
                parameters=spec.parameters,
                concurrent=spec.concurrent,
            )
            for spec in runtime.tools.specs.values()
        ]
    )


@router.post("/v1/tools/{name}", name="callTool", response_model=ToolResult)
async def call_tool(
    name: Annotated[str, Path(max_length=100)], body: ToolCall, runtime: RuntimeDep
) -> ToolResult:
    """Run one tool; arguments are checked against its schema (422 names the field)."""
    ctx = ToolContext(session_id=body.session_id, user_id=body.user_id, project=body.project)
    answer = await runtime.tools.call(name, body.args, ctx)
    return ToolResult(result=answer.text, is_error=answer.is_error)


@router.post("/v1/sessions/{sessionId}/compacted", name="sessionCompacted",
             response_model=CompactedResponse)  # fmt: skip
async def compacted(session_id: SessionId, runtime: RuntimeDep) -> CompactedResponse:
    """The client compacted this session's context: memories shown in it may surface again."""
    forgotten = runtime.seen.forget(session_id)
    hinted = runtime.assoc.reset(session_id)
    return CompactedResponse(forgotten=forgotten or hinted)


@router.get("/v1/intentions", name="listIntentions", response_model=IntentionList)
async def list_intentions(
    runtime: RuntimeDep, project: Annotated[Id | None, Query()] = None
) -> IntentionList:
    """Open intentions, soonest due first."""
    return IntentionList(items=[_intention(i) for i in await runtime.intentions.open(project)])


@router.post("/v1/intentions", name="addIntention", response_model=IntentionOut,
             status_code=status.HTTP_201_CREATED)  # fmt: skip
async def add_intention(body: IntentionIn, runtime: RuntimeDep) -> IntentionOut:
    """Remember something to do; it stays until completed or cancelled."""
    intention = await runtime.intentions.add(
        body.what, due=body.due, cue=body.cue, priority=body.priority, source=body.source,
        project=body.project,
    )  # fmt: skip
    return _intention(intention)


@router.post("/v1/intentions/{id}/complete", name="completeIntention", response_model=IntentionOut)
async def complete_intention(
    id: Annotated[str, Path(max_length=200)], runtime: RuntimeDep
) -> IntentionOut:
    """Close an intention as done (archived with status completed)."""
    return _intention(await runtime.intentions.complete(id))


@router.post("/v1/intentions/{id}/cancel", name="cancelIntention", response_model=IntentionOut)
async def cancel_intention(
    id: Annotated[str, Path(max_length=200)], runtime: RuntimeDep
) -> IntentionOut:
    """Close an intention as no longer wanted (archived with status cancelled)."""
    return _intention(await runtime.intentions.cancel(id))
