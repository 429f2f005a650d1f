from __future__ import annotations

import asyncio

from fastapi import APIRouter, Depends

from somnid.api.deps import RuntimeDep, answer_challenge
from somnid.api.schemas import BrokenFileOut, ComponentStatus, HealthOut
from somnid.services.status import collect_status

router = APIRouter(tags=["health"])


@router.get(
    "/v1/health",
    name="getHealth",
    response_model=HealthOut,
    dependencies=[Depends(answer_challenge)],
)
async def health(runtime: RuntimeDep) -> HealthOut:
    """Is somnid up, where is its data, and is anything wrong with it. With a
    Somnid-Challenge header, the answer proves somnid holds the token (Somnid-Proof)."""
    status = await asyncio.to_thread(collect_status, runtime.store)
    vector, vector_detail = runtime.recall.vector_status
    llm, llm_detail = runtime.dreamer.llm_status()
    storage, storage_detail = await asyncio.to_thread(runtime.store.health.check)
    degraded = status.broken or vector == "unavailable" or storage == "degraded"
    return HealthOut(
        status="degraded" if degraded else "ok",
        version=runtime.version,
        data_dir=str(runtime.layout.root),
        memory_dir=str(runtime.layout.memory_dir),
        skill_dir=str(runtime.layout.skills_dir),
        llm=ComponentStatus(status=llm, detail=llm_detail),
        vector=ComponentStatus(status=vector, detail=vector_detail),
        storage=ComponentStatus(status=storage, detail=storage_detail),
        pending_logs=status.pending_logs,
        counts=status.counts,
        broken_files=[BrokenFileOut(path=item.path, reason=item.reason) for item in status.broken],
    )
