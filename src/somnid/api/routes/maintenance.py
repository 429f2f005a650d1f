from __future__ import annotations

from fastapi import APIRouter

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.common import Change, DecayOut

router = APIRouter(prefix="/v1/maintenance", tags=["maintenance"])


@router.post("/decay", name="runDecay", response_model=DecayOut)
async def run_decay(runtime: RuntimeDep) -> DecayOut:
    """One decay + retirement pass now (idempotent within a day); returns what changed."""
    report = await runtime.maintenance.run()
    return DecayOut(
        day=report.day.isoformat(),
        decayed=[Change.model_validate(change, from_attributes=True) for change in report.decayed],
        retired=[Change.model_validate(change, from_attributes=True) for change in report.retired],
        expired_intentions=report.expired_intentions,
        skipped_broken=report.skipped,
    )
