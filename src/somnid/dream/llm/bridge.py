"""``dream.llm = "bridge"``: the host (the agent harness's plugin) lends somnid its LLM over a
websocket it opens to ``WS /v1/llm/bridge``.

Protocol: UTF-8 JSON text frames, one object each, with a ``type``. Calls are correlated by
``id``; several may be in flight. A host should ignore frame types it does not know.

    host → somnid   {"type": "hello", "host": "<name>", "model": "<provider/model>"}   optional
    somnid → host   {"type": "llm.chat", "id": "<uuid>", "messages": [...], "tools": [...],
                     "options"?: {"max_tokens"?, "temperature"?, "frequency_penalty"?,
                                  "response_format"?}}
    host → somnid   {"type": "llm.result", "id": "<uuid>",
                     "message": {"role": "assistant", "content": "...",
                                 "reasoning_content"?: "...", "tool_calls"?: [...]},
                     "usage"?: {"prompt_tokens", "completion_tokens", "cached_tokens"?},
                     "finish_reason"?: "stop" | "length" | "tool_calls"}
    host → somnid   {"type": "llm.error", "id": "<uuid>", "error": "<text>" | {"message": ...}}
    somnid → host   {"type": "llm.cancel", "id": "<uuid>"}   stop generating; send nothing more

``messages``, ``tools`` and ``options`` are OpenAI chat-completions shapes; a host that
cannot honour an option (a structured ``response_format``) may ignore it: somnid validates
every answer itself. ``llm.cancel`` is sent when
the caller gave up (timeout, or the dream was cancelled); a late answer to it is ignored.

One host at a time: a newer connection replaces the older one, which is closed with code
4001 and its calls fail. Losing the socket fails every pending call at once with
LLMUnavailable, so the dream stops cleanly and resumes next time. Frames that are not JSON
objects, or answer no pending call, are logged and ignored. Browsers are refused: a
handshake with an ``Origin`` header that is not a loopback origin is closed before accept
(any web page could otherwise open a socket to 127.0.0.1 and read the dream's prompts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from starlette.websockets import WebSocket

from somnid.dream.llm.base import (
    ChatOptions,
    ChatResult,
    LLMBadResponse,
    LLMRejected,
    LLMTimeout,
    LLMUnavailable,
    parse_chat_reply,
)

__all__ = ["CLOSE_REPLACED", "BridgeBackend", "BridgeHub", "HostInfo"]

log = logging.getLogger(__name__)

CLOSE_REPLACED = 4001  # a newer host connection took over
_CLOSE_GOING_AWAY = 1001
_CLOSE_POLICY = 1008
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_EXCERPT = 200


@dataclass(frozen=True, slots=True)
class HostInfo:
    """Who is connected: from the socket, and from the optional ``hello`` frame."""

    peer: str
    connected_at: float  # time.time()
    host: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class _Close:
    code: int
    reason: str


@dataclass(eq=False)
class _Connection:
    websocket: WebSocket
    info: HostInfo
    pending: dict[str, asyncio.Future[ChatResult]] = field(default_factory=dict)
    closing: bool = False
    outbox: asyncio.Queue[str | _Close] = field(default_factory=asyncio.Queue)

    def send(self, frame: dict[str, Any]) -> None:
        """Queue a frame; never blocks, so it is safe from a task being cancelled."""
        self.send_text(json.dumps(frame, ensure_ascii=False))

    def send_text(self, text: str) -> None:
        if not self.closing:
            self.outbox.put_nowait(text)

    def close(self, code: int, reason: str) -> None:
        if not self.closing:
            self.closing = True
            self.outbox.put_nowait(_Close(code, reason))

    def fail_all(self, reason: str) -> None:
        for future in self.pending.values():
            if not future.done():
                future.set_exception(LLMUnavailable(reason))
        self.pending.clear()

    async def write_loop(self) -> None:
        try:
            while True:
                item = await self.outbox.get()
                if isinstance(item, _Close):
                    await self.websocket.close(item.code, item.reason)
                    return
                await self.websocket.send_text(item)
        except Exception as exc:  # the socket went away under us; the reader will see it
            log.debug("llm bridge: send failed: %s", exc)
            self.closing = True
            self.fail_all(f"the LLM host connection broke: {exc}")


class BridgeHub:
    """Holds the connected host, if any, and runs chat calls over it."""

    name = "bridge"

    def __init__(self, *, request_timeout_s: float = 120.0) -> None:
        self.request_timeout_s = request_timeout_s
        self._active: _Connection | None = None
        self._closed = False

    @property
    def connected(self) -> bool:
        return self._active is not None and not self._active.closing

    @property
    def host_info(self) -> HostInfo | None:
        """The connected host, for status; None when no host is connected."""
        conn = self._active
        return conn.info if conn is not None and not conn.closing else None

    def available(self) -> bool:
        return self.connected

    async def serve(self, websocket: WebSocket) -> None:
        """Run one host connection until it closes (the ``WS /v1/llm/bridge`` handler)."""
        origin = websocket.headers.get("origin")
        if origin is not None and not _loopback_origin(origin):
            log.warning("llm bridge: refused a connection from origin %r", origin[:_EXCERPT])
            await websocket.close(_CLOSE_POLICY)  # before accept: the handshake gets a 403
            return
        if self._closed:
            await websocket.close(_CLOSE_GOING_AWAY)
            return
        await websocket.accept()
        client = websocket.client
        peer = f"{client.host}:{client.port}" if client else "unknown"
        conn = _Connection(websocket, HostInfo(peer=peer, connected_at=time.time()))
        previous, self._active = self._active, conn
        if previous is not None:
            log.info("llm bridge: host %s replaces %s", peer, previous.info.peer)
            previous.fail_all("the LLM host was replaced by a newer connection")
            previous.close(CLOSE_REPLACED, "replaced by a newer host connection")
        log.info("llm bridge: host connected from %s", peer)
        writer = asyncio.create_task(conn.write_loop(), name="somnid-llm-bridge-writer")
        try:
            await self._read(conn)
        finally:
            if self._active is conn:
                self._active = None
            conn.closing = True
            conn.fail_all("the LLM host disconnected")
            writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await writer
            log.info("llm bridge: host %s disconnected", conn.info.peer)

    async def close(self) -> None:
        """Shutting down: refuse new hosts, fail pending calls, close the active socket."""
        self._closed = True
        conn, self._active = self._active, None
        if conn is not None:
            conn.fail_all("somnid is shutting down")
            conn.close(_CLOSE_GOING_AWAY, "somnid is shutting down")

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
        *,
        timeout_s: float | None = None,
    ) -> ChatResult:
        """Send ``llm.chat`` to the host and wait for its answer.

        Raises LLMUnavailable (no host, or it went away), LLMTimeout (no answer in time),
        LLMRejected (``llm.error``), LLMBadResponse (a result that is not a chat reply).
        Cancelling the awaiting task sends ``llm.cancel`` and returns at once.
        """
        conn = self._active
        if conn is None or conn.closing:
            raise LLMUnavailable("no LLM host is connected to WS /v1/llm/bridge")
        timeout = self.request_timeout_s if timeout_s is None else timeout_s
        call_id = str(uuid.uuid4())
        frame: dict[str, Any] = {
            "type": "llm.chat",
            "id": call_id,
            "messages": messages,
            "tools": tools,
        }
        if options is not None and options.wire():
            frame["options"] = options.wire()
        text = json.dumps(frame, ensure_ascii=False)  # before registering: bad input raises
        future: asyncio.Future[ChatResult] = asyncio.get_running_loop().create_future()
        conn.pending[call_id] = future
        conn.send_text(text)
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            conn.send({"type": "llm.cancel", "id": call_id})
            raise LLMTimeout(f"the LLM host did not answer within {timeout:g} s") from None
        except asyncio.CancelledError:
            conn.send({"type": "llm.cancel", "id": call_id})
            raise
        finally:
            conn.pending.pop(call_id, None)

    async def _read(self, conn: _Connection) -> None:
        while True:
            message = await conn.websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                try:
                    text = bytes(message.get("bytes") or b"").decode()
                except UnicodeDecodeError:
                    log.warning("llm bridge: ignored a binary frame that is not UTF-8")
                    continue
            self._handle(conn, text)

    def _handle(self, conn: _Connection, text: str) -> None:
        try:
            frame = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested beyond reason
            log.warning("llm bridge: ignored a frame that is not JSON: %r", text[:_EXCERPT])
            return
        if not isinstance(frame, dict):
            log.warning("llm bridge: ignored a frame that is not an object: %r", text[:_EXCERPT])
            return
        kind = frame.get("type")
        if kind == "hello":
            host, model = _label(frame.get("host")), _label(frame.get("model"))
            conn.info = HostInfo(conn.info.peer, conn.info.connected_at, host, model)
            log.info("llm bridge: host %s says hello (model %s)", conn.info.host, conn.info.model)
            return
        if kind not in ("llm.result", "llm.error"):
            log.debug("llm bridge: ignored a frame of type %r", kind)
            return
        call_id = frame.get("id")
        future = conn.pending.get(call_id) if isinstance(call_id, str) else None
        if future is None or future.done():
            log.debug("llm bridge: ignored %s for no pending call (id %r)", kind, call_id)
            return
        if kind == "llm.error":
            future.set_exception(LLMRejected(f"the LLM host failed: {_error_text(frame)}"))
            return
        try:
            future.set_result(parse_chat_reply(frame, "the LLM host"))
        except LLMBadResponse as exc:
            log.warning("llm bridge: malformed llm.result for %s: %s", call_id, exc)
            future.set_exception(exc)


class BridgeBackend:
    """The ChatBackend for ``dream.llm = "bridge"``: the hub, with the configured timeout."""

    name = "bridge"

    def __init__(self, hub: BridgeHub, *, timeout_s: float) -> None:
        self.hub = hub
        self.timeout_s = timeout_s

    def available(self) -> bool:
        return self.hub.connected

    async def probe(self) -> str | None:
        return None if self.hub.connected else "no LLM host is connected to WS /v1/llm/bridge"

    async def chat(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        options: ChatOptions | None = None,
    ) -> ChatResult:
        timeout = options.timeout_s if options is not None and options.timeout_s else None
        return await self.hub.chat(messages, tools, options, timeout_s=timeout or self.timeout_s)


def _loopback_origin(origin: str) -> bool:
    try:
        host = urlsplit(origin.strip()).hostname
    except ValueError:
        return False
    return host in _LOOPBACK_HOSTS


def _label(value: object) -> str | None:
    return value[:_EXCERPT] if isinstance(value, str) and value else None


def _error_text(frame: dict[str, Any]) -> str:
    error = frame.get("error")
    if isinstance(error, dict):
        error = error.get("message") or error.get("code") or json.dumps(error)
    text = str(error) if error else "no reason given"
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"
