"""Request ids, the access log and request timings: the outermost middleware.

A pure ASGI middleware over HTTP and websockets. Each request gets an id: the client's
``X-Request-Id`` when it is sane (1 to 64 of ``A-Z a-z 0-9 . _ -``), else a new one. The id
is in every log line written while the request is served (``somnid.logs.request_id``) and is
sent back as ``X-Request-Id`` on every answer, refusals of the guard (401, 403) and of the
request limits (413, 415) included, since this middleware wraps them, and on a 500. A
request the server cancels (its shutdown budget ran out) is answered here too: ``503``
``shutting_down`` in the one error shape, not the server's bare 500 and a logged traceback.

One access line per request (logger ``somnid.access``): method, path, status, milliseconds,
with the route template as a field; at debug level for successful health probes and scrapes,
so they do not fill the journal. Headers are never logged, and the value of a query
parameter that names a secret (``access_token``, ``access%5Ftoken``, ``key``...) is shown as
``[REDACTED]`` (:func:`somnid.memory.scrub.redact_query`). HTTP timings go to the exporter
by route *template* (``/v1/memories/{kind}/{name}``), never the raw path, which would make
every name a series.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from somnid.api.errors import UNEXPECTED, send_problem
from somnid.api.exporter import Exporter
from somnid.logs import request_id
from somnid.memory.scrub import redact_query

log = logging.getLogger("somnid.access")

HEADER = "x-request-id"
SCOPE_KEY = "somnid.request_id"
_SANE_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")
_QUIET_ROUTES = frozenset({"/v1/health", "/metrics"})
# Any token is a method to the server: others are timed as OTHER, so no client can make series.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
CLIENT_GONE = 499  # nginx's "client closed request": ended before any answer


class Observe:
    def __init__(self, app: ASGIApp, exporter: Exporter) -> None:
        self.app = app
        self.exporter = exporter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        rid = incoming_id(scope) or secrets.token_hex(8)
        scope[SCOPE_KEY] = rid  # a handshake the server refuses after the app answers it too
        # Not reset afterwards: each request runs in a task of its own, and the 500 handler
        # (outside every middleware) logs the traceback in this task, with this id.
        request_id.set(rid)
        id_header = (HEADER.encode(), rid.encode())
        status: int | None = None
        start = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
            elif kind == "websocket.accept":
                status = 101
                message = {**message, "headers": [*message.get("headers", ()), id_header]}
            elif kind == "websocket.close" and status is None:
                status = 403  # closed before the handshake completed: servers answer 403
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            if status is None and scope["type"] == "http":
                await _internal_error(send, scope, id_header)
                status = 500
            raise
        except asyncio.CancelledError:
            # Only the server cancels a request's own task: its shutdown budget ran out
            # (a client that goes away is told by ``receive``, not by a cancel). An answer
            # in the one error shape, and the cancel ends here: re-raised, the server would
            # log it as a crash and answer a bare 500.
            if status is not None or scope["type"] != "http":
                raise
            await _stopping(send, scope, id_header)
            status = 503
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
        finally:
            self._done(scope, status or CLIENT_GONE, time.perf_counter() - start)

    def _done(self, scope: Scope, status: int, seconds: float) -> None:
        method = scope.get("method", "WS")
        route = route_template(scope)
        if scope["type"] == "http":
            timed = method if method in _METHODS else "OTHER"
            self.exporter.observe_request(timed, route, status, seconds)
        quiet = route in _QUIET_ROUTES and status < 400
        path: str = scope["path"]
        query = redact_query(scope.get("query_string", b"").decode("latin-1"))
        fields: dict[str, Any] = {
            "method": method,
            "route": route,
            "path": path,
            "status": status,
            "duration_ms": round(seconds * 1000, 2),
        }
        if query:
            fields["query"] = query
        log.log(
            logging.DEBUG if quiet else logging.INFO,
            "%s %s%s %d %.1f ms",
            method,
            path,
            f"?{query}" if query else "",
            status,
            seconds * 1000,
            extra=fields,
        )


def incoming_id(scope: Scope) -> str | None:
    """The client's ``X-Request-Id``, if there is one and it is sane."""
    for key, value in scope["headers"]:
        if key.lower() == b"x-request-id":
            text = value.decode("latin-1")
            return text if _SANE_ID.fullmatch(text) else None
    return None


def route_template(scope: Scope) -> str:
    """The path template of the route that served (or would have served) the request."""
    route = scope.get("route")
    if route is None:  # refused before routing: ask the routes which one it would have been
        app = scope.get("app")
        routes = _leaf_routes(getattr(getattr(app, "router", None), "routes", ()))
        route = next((r for r in routes if r.matches(scope)[0] is not Match.NONE), None)
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else UNMATCHED


def _leaf_routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    """Routes with a path, in routing order. FastAPI keeps an included router's routes
    behind a wrapper (``original_router``); without one, a route is its own leaf."""
    for route in routes:
        inner = getattr(getattr(route, "original_router", None), "routes", None)
        if inner is None:
            yield route
        else:
            yield from _leaf_routes(inner)


async def _stopping(send: Send, scope: Scope, id_header: tuple[bytes, bytes]) -> None:
    await send_problem(
        send,
        503,
        "shutting_down",
        "the daemon stopped before this request finished; a write it had begun was "
        "finished and kept: once the daemon is back, look before sending a write again",
        instance=scope["path"],
        headers=[id_header, (b"connection", b"close")],
    )


async def _internal_error(send: Send, scope: Scope, id_header: tuple[bytes, bytes]) -> None:
    """The 500 the app's handler would send, with the id: it sends nothing once we have.
    The server closes the connection after it (the error goes on up to it): the answer says
    so, or a client sends its next request into a closed socket."""
    headers = [id_header, (b"connection", b"close")]
    await send_problem(
        send, 500, "internal_error", UNEXPECTED, instance=scope["path"], headers=headers
    )
