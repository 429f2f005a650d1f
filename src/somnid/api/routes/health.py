from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from somnid.api.deps import RuntimeDep, answer_challenge
from somnid.api.guard import authorized
from somnid.api.schemas.common import BrokenFileOut, ComponentStatus, HealthOut, IndexComponent
from somnid.security import data_dir_id

router = APIRouter(tags=["health"])


@router.get(
    "/v1/health",
    name="getHealth",
    response_model=HealthOut,
    dependencies=[Depends(answer_challenge)],
)
async def health(runtime: RuntimeDep, request: Request) -> HealthOut:
    """Is somnid up, where is its data, and is anything wrong with it. With a
    Somnid-Challenge header, the answer proves somnid holds the token (Somnid-Proof)."""
    # Without the token or the browser's cookie (health is public): no path, no detail that
    # may hold one, no broken file; the data dir as an id the CLI can check
    # (somnid.security.data_dir_id).
    full = authorized(request.scope)
    status = await runtime.status.files()
    vector, vector_detail = runtime.status.vector
    llm, llm_detail = runtime.dreamer.llm_status()
    storage, storage_detail = await runtime.status.storage()
    index = await runtime.status.index()
    degraded = status.broken or vector == "unavailable" or storage == "degraded"
    degraded = degraded or not index.reachable or index.error is not None
    history = runtime.history.status()
    behind = history.enabled and history.last_error is not None
    degraded = degraded or behind
    layout = runtime.layout
    return HealthOut(
        status="degraded" if degraded else "ok",
        version=runtime.version,
        data_dir=str(layout.root) if full else data_dir_id(layout.root),
        memory_dir=str(layout.memory_dir if full else layout.relative(layout.memory_dir)),
        skill_dir=str(layout.skills_dir if full else layout.relative(layout.skills_dir)),
        llm=ComponentStatus(status=llm, detail=llm_detail if full else None),
        vector=ComponentStatus(status=vector, detail=vector_detail if full else None),
        storage=ComponentStatus(status=storage, detail=storage_detail if full else None),
        index=IndexComponent(
            status="unavailable" if not index.reachable else "degraded" if index.error else "ok",
            backend=index.backend,
            server_version=index.server_version if full else None,
            extension=index.extension if full else None,
            detail="; ".join(filter(None, (index.location, index.error))) if full else None,
        ),
        history=ComponentStatus(
            status="degraded" if behind else "ok" if history.enabled else "off",
            detail=(history.last_error or history.detail) if full else None,
        ),
        pending_logs=status.pending_logs,
        counts=status.counts,
        broken_files=[BrokenFileOut(path=item.path, reason=item.reason) for item in status.broken]
        if full
        else [],
    )
