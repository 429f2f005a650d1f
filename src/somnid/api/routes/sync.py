"""Sync routes: run a round now, its status, and settling a conflict."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.sync import SyncStatusOut

router = APIRouter(tags=["sync"])


@router.post("/v1/sync", name="runSync", response_model=SyncStatusOut)
async def run_sync(runtime: RuntimeDep) -> SyncStatusOut:
    """Fetch, merge and push now; 503 with the reason when sync is off or the remote could
    not be reached or refused (writes go on; the next round catches up)."""
    return SyncStatusOut.of(await runtime.sync.run())


@router.get("/v1/sync/status", name="getSyncStatus", response_model=SyncStatusOut)
async def get_sync_status(runtime: RuntimeDep) -> SyncStatusOut:
    """Last pull and push, commits ahead and behind, the last error, the open conflicts."""
    return SyncStatusOut.of(await runtime.sync.status())


@router.delete("/v1/sync/conflicts", name="resolveSyncConflict", status_code=204)
async def resolve_sync_conflict(
    runtime: RuntimeDep,
    path: Annotated[
        str, Query(max_length=400, pattern=r"^[^\x00-\x1f\x7f]*$", description="Its path.")
    ],
    keep: Annotated[
        Literal["this", "other"],
        Query(description="Which version the entry keeps: this machine's, or the other's."),
    ] = "this",
) -> Response:
    """Settle a conflict: its file goes (history keeps it). ``keep=other``: the entry takes
    the other machine's version first (this machine's stays in history)."""
    await runtime.sync.resolve(path, take_other=keep == "other")
    return Response(status_code=204)
