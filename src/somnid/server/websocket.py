"""uvicorn's WebSocket protocol, its refusals in the API's one error shape.

A handshake that cannot be accepted (a missing or malformed ``Sec-WebSocket-Key``, a
WebSocket asked of a path that serves none, a handshake too large) is answered by the
``websockets`` library with a plain-text body; here that answer carries the same problem
details as every other error.
"""

from __future__ import annotations

import json
import secrets
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.http11 import Response

from somnid.api.errors import PROBLEM_JSON, UNEXPECTED, problem_body
from somnid.api.observe import HEADER, SCOPE_KEY, incoming_id

_PLAIN_PREFIX = "Failed to open a WebSocket connection: "
_CODES = {
    400: "bad_request",
    403: "forbidden",
    405: "method_not_allowed",
    414: "uri_too_long",
    431: "headers_too_large",
}


def problem_detail(status: int, text: str) -> str:
    """What a refused handshake's answer says, from the library's plain text."""
    text = text.strip().removeprefix(_PLAIN_PREFIX).rstrip(".")
    if status >= 500:
        return UNEXPECTED
    if status == 403 and not text:  # the app closed the socket before accepting it
        return "no WebSocket is served at this path, or its route refused this one"
    return f"not a WebSocket handshake somnid can accept: {text or HTTPStatus(status).phrase}"


class ProblemWebSockets(WebSocketsSansIOProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain = self.conn.reject

        def reject(status: int, text: str) -> Response:
            response = plain(status, text)
            code = _CODES.get(response.status_code, "internal_error")
            detail = problem_detail(response.status_code, text)
            scope: Any = getattr(self, "scope", None)  # None: refused as the request came
            request: Any = getattr(self, "request", None)
            path = scope.get("path") if isinstance(scope, dict) else None
            if path is None and request is not None:
                path = unquote(str(request.path).partition("?")[0])
            body = json.dumps(problem_body(response.status_code, code, detail, instance=path))
            rid = _request_id(scope)
            for name, value in (
                ("Content-Type", PROBLEM_JSON),
                ("Content-Length", str(len(body.encode()))),
                (HEADER, rid),
            ):
                response.headers.pop(name, None)
                response.headers[name] = value
            if response.status_code == 405 and "Allow" not in response.headers:
                response.headers["Allow"] = "GET"  # a handshake is a GET (RFC 6455)
            response.body = body.encode()
            return response

        # The library builds every refusal, its own and uvicorn's, with this one method.
        self.conn.reject = reject  # type: ignore[method-assign]


def _request_id(scope: Any) -> str:
    """The id the API's log gave this request, the client's own, or a new one."""
    if not isinstance(scope, dict):
        return secrets.token_hex(8)
    given = scope.get(SCOPE_KEY)
    return given if isinstance(given, str) else incoming_id(scope) or secrets.token_hex(8)
