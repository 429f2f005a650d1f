"""The memory tools over MCP (Model Context Protocol): streamable HTTP at ``POST /mcp``.

One registry behind both doors: ``tools/list`` gives the names, descriptions and JSON schemas
of ``GET /v1/tools``, and ``tools/call`` runs the same validated call as
``POST /v1/tools/{name}``. A result is the tool's Markdown as one text block. A failed call
(bad arguments, an unknown tool, a ``SomnidError`` from the tool) is a tool result with
``isError: true`` whose text is the detail the HTTP route would answer, plus one line per
failing field, and whose ``structuredContent`` is ``{code, detail, errors?}``: the model
reads why and can try again, and the connection carries on.

Stateless, JSON responses: each POST is answered on its own, without ``Mcp-Session-Id`` or
an event stream. The tools never stream progress nor ask the client anything, a local
client loses nothing by it, and a daemon restart strands no session. ``GET`` and ``DELETE``
answer 405, the spec's answer from a server that keeps no stream and no sessions.

A malformed JSON-RPC envelope (an ``id`` of the wrong type, a batch, ``"jsonrpc"`` missing)
and an unknown ``MCP-Protocol-Version`` are answered here, not by the SDK
(:mod:`somnid.api.mcp_envelope`).

The SDK's DNS-rebinding check is off: somnid's guard, in front of every path, checks Host,
Origin and the bearer token for ``/mcp`` as for the rest.

``project``, ``sessionId`` and ``userId`` in the URL's query scope the calls the way the body
of ``POST /v1/tools/{name}`` does, e.g. ``http://127.0.0.1:7373/mcp?project=webshop``.

The SDK is imported and the session manager started by the first request to ``/mcp``
(:mod:`somnid.api.mcp_server`, in a worker thread): it takes ~0.5 s of CPU that neither the
daemon's start nor a daemon without MCP clients should pay; that first request waits for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from somnid.api.mcp_envelope import envelope_error, version_error
from somnid.errors import Unavailable
from somnid.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

log = logging.getLogger(__name__)

PATH = "/mcp"
METHODS = ["POST"]
START_WAIT_S = 30.0


def _new_manager(tools: ToolRegistry) -> StreamableHTTPSessionManager:
    """Import the SDK (in a worker thread, off the event loop) and build the manager."""
    from somnid.api.mcp_server import session_manager

    return session_manager(tools)


class McpEndpoint:
    """The ASGI app at ``/mcp``; it answers while ``serving`` runs (inside the app's lifespan)."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._tools: ToolRegistry | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()

    @contextlib.asynccontextmanager
    async def serving(self, tools: ToolRegistry) -> AsyncIterator[None]:
        """Serve ``tools`` until the block ends; the SDK starts with the first request."""
        self._tools, self._stop, self._ready = tools, asyncio.Event(), asyncio.Event()
        try:
            yield
        finally:
            self._stop.set()
            task, self._task, self._tools = self._task, None, None
            if task is not None:
                await task

    async def _run(self, tools: ToolRegistry, stop: asyncio.Event) -> None:
        try:
            manager = await asyncio.to_thread(_new_manager, tools)
            async with manager.run():
                self._manager = manager
                self._ready.set()
                await stop.wait()
        except Exception:
            log.exception("the MCP endpoint could not start")
        finally:
            self._manager = None
            self._ready.set()  # waiting requests get their answer (503) instead of hanging

    def route(self) -> Route:
        """``POST /mcp``, outside the OpenAPI document (JSON-RPC inside is MCP's contract)."""
        return Route(PATH, self, methods=METHODS, name="mcp", include_in_schema=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._task is None and self._tools is not None:
            self._task = asyncio.create_task(self._run(self._tools, self._stop), name="somnid-mcp")
        if self._manager is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), START_WAIT_S)
        manager = self._manager
        if manager is None:
            raise Unavailable("the MCP endpoint is not running; see the daemon's log")
        body = await _body(receive)
        refused = envelope_error(body)
        requested = _header(scope, b"mcp-protocol-version")
        if refused is None and requested is not None:
            from somnid.api.mcp_server import PROTOCOL_VERSIONS  # imported with the manager

            refused = version_error(body, requested, PROTOCOL_VERSIONS)
        if refused is not None:
            await _send_json(send, 400, refused)
            return
        await manager.handle_request(_accepting(scope), _replay(body, receive), send)


def _accepting(scope: Scope) -> Scope:
    """A request with no ``Accept`` (or ``*/*``) accepts anything (RFC 9110): the SDK
    answered 406 and dropped the request's id (Python's urllib sends none)."""
    accept = _header(scope, b"accept")
    if accept is not None and accept.strip() and "*/*" not in accept:
        return scope
    headers = [(key, value) for key, value in scope["headers"] if key.lower() != b"accept"]
    return {**scope, "headers": [*headers, (b"accept", b"application/json, text/event-stream")]}


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def _body(receive: Receive) -> bytes:
    """The request's body (its size is bounded before: :mod:`somnid.api.limits`)."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body already read given once more, for the SDK."""
    given = False

    async def again() -> Message:
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again


async def _send_json(send: Send, status: int, content: dict[str, Any]) -> None:
    payload = json.dumps(content).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
