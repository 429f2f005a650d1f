"""``WS /v1/llm/bridge``: the host's end of the dream's LLM bridge.

The protocol (frames, ids, cancellation, who may connect) is written down in
:mod:`somnid.dream.llm.bridge`; this route only hands the socket to the hub.
"""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from somnid.dream.llm.bridge import BridgeHub

router = APIRouter(tags=["dream"])


@router.websocket("/v1/llm/bridge", name="llmBridge")
async def llm_bridge(websocket: WebSocket) -> None:
    """One host connection, served until it closes."""
    hub: BridgeHub = websocket.app.state.runtime.bridge
    await hub.serve(websocket)
