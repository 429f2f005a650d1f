from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import asdict

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from somnid.api.deps import RuntimeDep
from somnid.api.schemas.sleep import (
    ActivityReport,
    ActivityResponse,
    CancelResponse,
    DreamResultOut,
    LlmStatus,
    SleepRun,
    SleepRunResponse,
    SleepStatus,
)
from somnid.dream.result import DreamResult

router = APIRouter(tags=["sleep"])

KEEPALIVE_SECONDS = 15.0


def _result(result: DreamResult | None) -> DreamResultOut | None:
    return None if result is None else DreamResultOut(**asdict(result))


@router.post("/v1/sleep/run", name="runSleep", response_model=SleepRunResponse)
async def run_sleep(runtime: RuntimeDep, body: SleepRun | None = None) -> SleepRunResponse:
    """Start a dream now (one at a time). With ``wait`` the answer carries its result."""
    request = body or SleepRun()
    started, task = runtime.dreamer.start(request.trigger)
    result = None
    if request.wait and task is not None:
        result = _result(await runtime.dreamer.outcome(task, request.trigger))
    return SleepRunResponse(started=started, sleeping=runtime.dreamer.sleeping, result=result)


@router.post("/v1/sleep/cancel", name="cancelSleep", response_model=CancelResponse)
async def cancel_sleep(runtime: RuntimeDep) -> CancelResponse:
    """Interrupt the running dream; answers once it has stopped."""
    return CancelResponse(cancelled=await runtime.dreamer.cancel())


@router.get("/v1/sleep/status", name="getSleepStatus", response_model=SleepStatus)
async def sleep_status(runtime: RuntimeDep) -> SleepStatus:
    """Whether somnid sleeps, what waits, the LLM, the last dream and the next chance."""
    dreamer = runtime.dreamer
    now = dreamer.status()
    status, detail = await dreamer.probe_llm()
    verdict = await runtime.scheduler.eligibility()
    waiting, passed = await dreamer.waiting()  # one read of the pending logs for both
    return SleepStatus(
        sleeping=now["sleeping"],
        trigger=now["trigger"],
        since=now["since"],
        pending_logs=waiting + len(passed),
        passed_by=passed,
        llm=LlmStatus(status=status, detail=detail),
        last_dream=_result(dreamer.last),
        next_eligible=verdict.next_eligible.isoformat() if verdict.next_eligible else None,
        eligibility=verdict.reason,
    )


@router.get("/v1/sleep/events", name="sleepEvents", response_class=StreamingResponse)
async def sleep_events(runtime: RuntimeDep, request: Request) -> StreamingResponse:
    """Server-Sent Events: ``started``, each ``tool`` call, ``finished``."""

    async def stream() -> AsyncIterator[str]:
        async with runtime.dreamer.events.subscribe() as queue:
            yield ": connected\n\n"
            while not runtime.dreamer.events.closed and not await request.is_disconnected():
                try:
                    event = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                yield f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n"
                if event["type"] == "closing":
                    return

    return StreamingResponse(stream(), media_type="text/event-stream")


@router.post("/v1/activity", name="reportActivity", response_model=ActivityResponse)
async def report_activity(body: ActivityReport, runtime: RuntimeDep) -> ActivityResponse:
    """A host reports an agent running or idle; running interrupts a dream within a second."""
    interrupted = await runtime.scheduler.on_report(body.host_id, body.agent_id, body.status)
    return ActivityResponse(interrupted=interrupted)
