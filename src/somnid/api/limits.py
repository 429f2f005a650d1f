"""Request gatekeeping before a route runs: the path (400), body size (413) and media
type (415).

A pure ASGI middleware. A path whose percent escapes are not UTF-8 (``%FF``) is a 400: the
server would read each such byte as U+FFFD, so two different paths would name one session
or entry. Of a body it buffers at most ``max_body_bytes`` + 1, answers 413 past that, and
415 when a body is sent with a content type other than JSON or with a
``Content-Encoding`` (gzip, say: read as JSON it would be a confusing 400); a JSON body in
UTF-16 or UTF-32 is a 400 (the API speaks UTF-8; Python's JSON reader would take them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from urllib.parse import unquote_to_bytes

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from somnid.api.errors import send_problem

_JSON_TYPES = ("application/json", "application/merge-patch+json")
_BODY_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# A refused body is read to its end before the 413 goes out (up to these bounds): a socket
# closed with unread bytes in it resets the connection, and the client loses the answer.
_DRAIN_BYTES = 64 * 1024 * 1024
_DRAIN_SECONDS = 10.0


class RequestLimits:
    def __init__(self, app: ASGIApp, max_body_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not _utf8_path(scope):
            await _drain(receive)
            detail = "the URL's percent escapes are not UTF-8 (encode names and ids as UTF-8)"
            await _reject(send, scope, 400, "invalid_input", detail)
            return
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1").lower(): value.decode("latin-1")
            for key, value in scope["headers"]
        }
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            if headers.get("expect", "").strip().lower() != "100-continue":
                await _drain(receive)  # else the client waits to send it: reading asks for it
            await _reject(send, scope, 413, "body_too_large", self._too_large())
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                if message.get("more_body", False):
                    await _drain(receive)
                await _reject(send, scope, 413, "body_too_large", self._too_large())
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        media = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if body and media not in _JSON_TYPES:
            detail = f"send JSON with Content-Type: application/json (got {media or 'none'!r})"
            await _reject(send, scope, 415, "unsupported_media_type", detail)
            return
        coding = headers.get("content-encoding", "").strip().lower()
        if body and coding not in ("", "identity"):
            detail = f"send the body as it is, without Content-Encoding (got {coding[:40]!r})"
            await _reject(send, scope, 415, "unsupported_media_type", detail)
            return
        if body and json.detect_encoding(body) not in ("utf-8", "utf-8-sig"):
            detail = "the request body is not valid JSON: send it as UTF-8"
            await _reject(send, scope, 400, "invalid_json", detail)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return f"the request body is larger than {self.max_body_bytes} bytes"


async def _reject(send: Send, scope: Scope, status: int, code: str, detail: str) -> None:
    close = [(b"connection", b"close")]  # the unread rest of the body is not wanted
    await send_problem(send, status, code, detail, instance=scope.get("path"), headers=close)


async def _drain(receive: Receive) -> None:
    """Read and drop the rest of a body, within bounds of size and time."""

    async def read_to_end() -> None:
        drained = 0
        while drained <= _DRAIN_BYTES:
            message = await receive()
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                return
            drained += len(message.get("body", b""))

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(read_to_end(), _DRAIN_SECONDS)


def _utf8_path(scope: Scope) -> bool:
    """The path's and the query's percent escapes are UTF-8 (``/mcp?userId=%FF``: a query
    names ids too)."""
    for raw in (scope.get("raw_path"), scope.get("query_string")):
        if isinstance(raw, bytes) and b"%" in raw:
            try:
                unquote_to_bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                return False
    return True
