from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.recall import (
    ActionRequest,
    AssocResponse,
    HintItemOut,
    ResetResponse,
    ThoughtRequest,
)
from somnid.recall.assoc import Decision
from somnid.runtime import Runtime

router = APIRouter(prefix="/v1/assoc", tags=["hints"])


async def _answer(runtime: Runtime, decision: Decision) -> AssocResponse:
    settings = runtime.settings
    found, hint = await runtime.recaller.hint(
        decision, settings.prompt_lang, settings.assoc.token_budget
    )
    return AssocResponse(
        items=[
            HintItemOut(
                kind=f.hit.kind,
                name=f.hit.name,
                source=f.hit.path,
                score=f.hit.score,
                description=f.entry.description,
            )
            for f in found
        ],
        hint=hint,
        decision=decision.reason,
    )


@router.post("/thought", name="assocThought", response_model=AssocResponse)
async def thought(body: ThoughtRequest, runtime: RuntimeDep) -> AssocResponse:
    """A hint for the latest user message, if one memory clearly fits and is not yet shown."""
    decision = await runtime.assoc.thought(body.session_id, body.cue, body.project)
    return await _answer(runtime, decision)


@router.post("/action", name="assocAction", response_model=AssocResponse)
async def action(body: ActionRequest, runtime: RuntimeDep) -> AssocResponse:
    """A hint after a tool ran (the memory tools themselves never trigger one)."""
    decision = await runtime.assoc.action(body.session_id, body.tool_name, body.args, body.project)
    return await _answer(runtime, decision)


@router.delete("/sessions/{sessionId}", name="resetAssocSession", response_model=ResetResponse)
async def reset(
    session_id: Annotated[str, Path(alias="sessionId", max_length=200)], runtime: RuntimeDep
) -> ResetResponse:
    """Forget what this session was shown, so its memories may surface again."""
    return ResetResponse(reset=runtime.assoc.reset(session_id))
