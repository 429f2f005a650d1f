from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from somnid.api.deps import RuntimeDep
from somnid.api.exporter import CONTENT_TYPE, Exporter

router = APIRouter(tags=["metrics"])

_EXPOSITION: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "Prometheus text exposition format 0.0.4.",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }
}


@router.get("/metrics", name="getMetrics", response_class=Response, responses=_EXPOSITION)
async def metrics(runtime: RuntimeDep, request: Request) -> Response:
    """Counters, gauges and latency histograms for Prometheus (needs the token)."""
    exporter: Exporter = request.app.state.exporter
    return Response(await exporter.scrape(runtime), media_type=CONTENT_TYPE)
