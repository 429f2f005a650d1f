from __future__ import annotations

import asyncio

from fastapi import APIRouter

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.recall import (
    IndexStatusOut,
    RebuildRequest,
    RebuildResponse,
    RecallItem,
    RecallLine,
    RecallRequest,
    RecallResponse,
    SyncReportOut,
    SyncRequest,
)
from somnid.services.archive_recall import ArchiveLine
from somnid.services.recalling import kinds_or_default, snippet

router = APIRouter(tags=["recall"])


@router.post("/v1/recall", name="recall", response_model=RecallResponse)
async def recall(body: RecallRequest, runtime: RuntimeDep) -> RecallResponse:
    """Search memory by meaning and keywords. Results are quoted data with their source."""
    recalled = await runtime.recaller.find(
        body.query,
        kinds=kinds_or_default(body.kinds),
        limit=body.limit,
        project=body.project,
        lines=body.limit,
    )
    return RecallResponse(
        query=body.query,
        mode=recalled.mode,
        time=recalled.time if body.explain else None,
        items=[
            RecallItem(
                kind=f.hit.kind,
                name=f.hit.name,
                source=f.hit.path,
                score=f.hit.score,
                description=f.entry.description,
                content=snippet(f.entry.body),
                components=f.hit.components if body.explain else None,
            )
            for f in recalled.found
        ],
        lines=[line_out(line) for line in recalled.lines],
        markdown=recalled.markdown,
    )


def line_out(line: ArchiveLine) -> RecallLine:
    when = line.time.isoformat() if line.time else None
    return RecallLine(
        log=line.log, role=line.role, speaker=line.speaker, time=when, text=line.text,
        score=line.score,
    )  # fmt: skip


@router.post("/v1/index/sync", name="syncIndex", response_model=SyncReportOut)
async def sync_index(runtime: RuntimeDep, body: SyncRequest | None = None) -> SyncReportOut:
    """Reconcile the index with the files now (hash diff); vectors follow in the background."""
    report = await runtime.recall.sync()
    return SyncReportOut.model_validate(report, from_attributes=True)


@router.post("/v1/index/rebuild", name="rebuildIndex", response_model=RebuildResponse)
async def rebuild_index(runtime: RuntimeDep, body: RebuildRequest | None = None) -> RebuildResponse:
    """Read and index every file again, in the background; follow it in the index status."""
    request = body or RebuildRequest()
    return RebuildResponse(started=runtime.recall.start_rebuild(vectors=request.vectors))


@router.get("/v1/index/status", name="getIndexStatus", response_model=IndexStatusOut)
async def index_status(runtime: RuntimeDep) -> IndexStatusOut:
    """Entries, vectors, model, texts still waiting for a vector, last sync."""
    status = await asyncio.to_thread(runtime.recall.status)
    return IndexStatusOut.model_validate(status, from_attributes=True)
