"""The door: Host, Origin and bearer token, checked before anything else runs.

A pure ASGI middleware over HTTP and websockets alike (the LLM bridge and ``/mcp`` are
guarded like every route). Refusals use the one problem shape:

- 400 ``invalid_input``: a header read by one part as its first value and by another as
  its last (the token, the origin, a body's type) given twice with different values;
- 403 ``forbidden_host``: the Host header is not a loopback name or a configured host
  (DNS rebinding);
- 403 ``forbidden_origin``: a browser page from an origin that is not allowed (cross-site);
- 401 ``unauthorized``: no token or the wrong one. ``GET /v1/health`` and the API
  documentation (``/docs``, ``/redoc``, ``/openapi.json`` and ``/docs/assets/``) need none,
  nor the memory browser's page, assets and login (``/ui``), whose cookie then stands for
  the token (see :mod:`somnid.ui.session`).

Websockets may also present the token as ``?access_token=`` (browsers cannot set headers
on a websocket); a refused handshake is answered with the same problem body where the
server supports it, else with a plain close.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import parse_qs

from starlette.types import ASGIApp, Receive, Scope, Send

from somnid.api.errors import send_problem
from somnid.security import HostPolicy, bearer, token_matches
from somnid.ui.session import UISessions, cookie_matches

log = logging.getLogger(__name__)

PUBLIC_PATHS = frozenset(
    {"/v1/health", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json"}
)
PUBLIC_PREFIXES = ("/docs/assets/", "/ui/assets/")  # pages' scripts and styles
UI_PUBLIC = frozenset({"/ui", "/ui/", "/ui/login", "/ui/logout"})  # the login checks the token
_WS_QUERY_TOKEN = "access_token"
# Headers read by one part as their first value and by another as their last: two that
# differ are refused before any is checked (a token, an origin, a body's type each checked
# on one, used as the other; checked after the token, the order of the two decided the code).
_SINGLE = frozenset({"authorization", "origin", "content-type", "content-encoding"})


def is_public(path: str) -> bool:
    return path in PUBLIC_PATHS or path in UI_PUBLIC or path.startswith(PUBLIC_PREFIXES)


class Guard:
    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get("host")
        refusal: tuple[int, str, str] | None = None
        twice = _given_twice(scope)
        if not self.policy.host_allowed(host):
            refusal = (
                403,
                "forbidden_host",
                f"somnid answers only to a loopback host name, not {_shown(host)}; "
                "add the name to allowed_hosts if it is yours",
            )
        elif twice is not None:  # before the checks that read one of them (no body read)
            detail = f"the {twice} header is given twice, with different values: send one"
            refusal = (400, "invalid_input", detail)
        elif not self.policy.origin_allowed(headers.get("origin"), host):
            refusal = (
                403,
                "forbidden_origin",
                f"requests from the web origin {_shown(headers.get('origin'))} are not "
                "allowed; add it to allowed_origins if it is yours",
            )
        elif (
            not _preflight(scope, headers)
            and not is_public(scope["path"])
            and not authorized(scope, headers)
        ):
            refusal = (
                401,
                "unauthorized",
                "send the token as 'Authorization: Bearer <token>' "
                "(`somnid token` prints it; it is in <data dir>/token)",
            )
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, code, detail = refusal
        if status == 403:
            log.warning(
                "refused %s %s: %s (host=%s origin=%s)",
                scope.get("method", "WS"),
                scope["path"],
                code,
                _shown(host),
                _shown(headers.get("origin")),
            )
        if scope["type"] == "http":
            challenge = [(b"www-authenticate", b'Bearer realm="somnid"')] if status == 401 else []
            if status == 400:  # its body is not read: the connection is not used again
                challenge.append((b"connection", b"close"))
            origin = headers.get("origin")
            if status == 401 and origin:  # an allowed page reads why (the CORS layer is inside)
                challenge += [
                    (b"access-control-allow-origin", origin.encode("latin-1")),
                    (b"access-control-expose-headers", b"ETag, Location, X-Request-Id"),
                    (b"vary", b"Origin"),
                ]
            await send_problem(
                send, status, code, detail, instance=scope["path"], headers=challenge
            )
        else:
            await receive()  # the handshake's websocket.connect comes first
            await _refuse_websocket(scope, send, status, code, detail)


def authorized(scope: Scope, headers: dict[str, str] | None = None) -> bool:
    """Whether a request holds the token (its header, or the browser's cookie); on a public
    route too, whose answer then says more (health's details)."""
    headers = _headers(scope) if headers is None else headers
    expected = _expected_token(scope)
    if expected is None:
        return False
    presented = bearer(headers.get("authorization"))
    if presented is None and scope["type"] == "http":  # the memory browser's cookie
        state: dict[str, Any] = scope.get("state") or {}
        sessions = state.get("ui_sessions")
        keys = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key")
        return cookie_matches(
            sessions if isinstance(sessions, UISessions) else None,
            expected, headers, scope["method"], scope["path"], keys[0] if keys else None,
        )  # fmt: skip
    if presented is None and scope["type"] == "websocket":
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        values = query.get(_WS_QUERY_TOKEN)
        presented = values[0] if values else None
    return token_matches(expected, presented)


def _expected_token(scope: Scope) -> str | None:
    state: dict[str, Any] = scope.get("state") or {}
    token = state.get("token")
    return token if isinstance(token, str) else None


def _preflight(scope: Scope, headers: dict[str, str]) -> bool:
    """A browser's CORS preflight (it never carries the token; its Host and Origin are
    checked as any request's, then the CORS layer answers it)."""
    return (
        scope["type"] == "http"
        and scope["method"] == "OPTIONS"
        and "origin" in headers
        and "access-control-request-method" in headers
    )


def _given_twice(scope: Scope) -> str | None:
    """The name of a header of :data:`_SINGLE` the request gives twice, differently."""
    seen: dict[str, bytes] = {}
    for key, value in scope["headers"]:
        name = bytes(key).lower().decode("latin-1")
        if name in _SINGLE and seen.setdefault(name, bytes(value)) != value:
            return name
    return None


def _headers(scope: Scope) -> dict[str, str]:
    return {
        key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]
    }


def _shown(value: str | None) -> str:
    if value is None:
        return "(none)"
    return repr(value[:80])


async def _refuse_websocket(scope: Scope, send: Send, status: int, code: str, detail: str) -> None:
    if "websocket.http.response" in scope.get("extensions", {}):
        await send_problem(send, status, code, detail, instance=scope["path"], websocket=True)
        return
    await send({"type": "websocket.close", "code": 1008, "reason": code})
