"""The JSON-RPC 2.0 envelope of a message to ``/mcp``, checked before the MCP SDK reads it.

The SDK reads a request whose ``id`` is no string or integer (an object, a list, ``true``,
``1.5``, ``null``) as a notification and answers 202 with no body: the client waits for an
answer that never comes. And it answers a malformed envelope with ``-32602`` (invalid
params) and a dump of its validation errors. Here such a message gets what JSON-RPC 2.0 and
MCP say: ``-32600`` (Invalid Request), with the request's id when it has a valid one and
``null`` otherwise, and one sentence saying what is wrong; HTTP 400, as the SDK's own
refusals. A batch (a JSON array) is refused the same way: MCP 2025-06-18 has none.

What is not JSON is left to the SDK (``-32700``, parse error); so is every well-formed
message, requests, notifications and responses alike.

An ``MCP-Protocol-Version`` header the SDK does not speak is refused the same way, naming
the versions it does (:func:`version_error`); the SDK took any unknown value for its newest
protocol and answered with a message about that protocol's ``_meta`` keys.
"""

from __future__ import annotations

import json
from typing import Any

INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def envelope_error(body: bytes) -> dict[str, Any] | None:
    """The JSON-RPC error answer to a malformed message, or None when the SDK should read it."""
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, nested past Python's
        return None  # stack: the SDK's own parser refuses it (parse error, or a 400)
    if isinstance(message, list):
        return _refused(None, "a batch (a JSON array) is not served: one message per request")
    if not isinstance(message, dict):
        return _refused(None, "a message is a JSON object")
    ident = message.get("id")
    valid = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
    reply_to = ident if valid else None
    if message.get("jsonrpc") != "2.0":
        return _refused(reply_to, '"jsonrpc" must be "2.0"')
    if "method" in message:
        if not isinstance(message["method"], str):
            return _refused(reply_to, '"method" must be a string')
        if "id" in message and not valid:
            return _refused(None, '"id" must be a string or an integer')
        if "params" in message and not isinstance(message["params"], dict):
            return _refused(reply_to, '"params" must be an object')
        if message["method"] == "tools/call":
            return _call_error(reply_to, message.get("params"))
        return None
    if "result" in message and "error" in message:
        return _refused(reply_to, 'a response has a "result" or an "error", not both')
    if "error" in message and not _an_error(message["error"]):
        return _refused(
            reply_to, '"error" must be an object with an integer "code" and a string "message"'
        )
    if "result" in message or "error" in message:
        return None  # a response to a request of the server's: the SDK takes it
    return _refused(reply_to, 'a message has a "method", or a "result" or an "error"')


def version_error(body: bytes, requested: str, supported: tuple[str, ...]) -> dict[str, Any] | None:
    """The JSON-RPC error answer to a protocol version outside ``supported``, or None."""
    if requested in supported:
        return None
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        message = None
    ident = message.get("id") if isinstance(message, dict) else None
    valid = isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))
    answer = _refused(
        ident if valid else None,
        f"MCP-Protocol-Version {requested[:40]!r} is not spoken here: "
        f"send one of {', '.join(supported)}",
    )
    answer["error"]["data"] = {"supported": list(supported), "requested": requested[:200]}
    return answer


def _an_error(error: object) -> bool:
    if not isinstance(error, dict):
        return False
    code = error.get("code")
    return (
        isinstance(code, int)
        and not isinstance(code, bool)
        and isinstance(error.get("message"), str)
    )


def _call_error(ident: str | int | None, params: object) -> dict[str, Any] | None:
    """A ``tools/call`` whose params name no tool or carry arguments that are no object: the
    SDK answered ``Invalid request parameters`` and nothing more."""
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        why = 'tools/call needs "params": {"name": "<tool>", "arguments": {...}}'
    elif "arguments" in params and not isinstance(params["arguments"], dict | None):
        why = f"the arguments of tools/call {params['name'][:80]!r} must be an object"
    else:
        return None
    return _refused(ident, why, INVALID_PARAMS)


def _refused(ident: str | int | None, why: str, code: int = INVALID_REQUEST) -> dict[str, Any]:
    said = "Invalid Request" if code == INVALID_REQUEST else "Invalid params"
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": f"{said}: {why}"}}
