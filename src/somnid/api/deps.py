"""Request-scoped access to the runtime the lifespan opened."""

from __future__ import annotations

import json
import re
from typing import Annotated

from fastapi import Depends, Header, Request, Response
from starlette.requests import HTTPConnection

from somnid.errors import InvalidInput
from somnid.runtime import Runtime
from somnid.security import CHALLENGE_HEADER, CHALLENGE_PATTERN, PROOF_HEADER, token_proof

_ETAG = re.compile(r"[0-9a-f]{20}")
"""What somnid's ETags are (see ``etag_of``): twenty hex digits. Anything else is no ETag
of ours, refused as malformed (400), never taken for a stale one (412)."""


# The dependencies are ``async def``: FastAPI runs a plain ``def`` dependency in its thread
# pool, a round trip through another thread on every request (~0.5 ms on a slow host).


async def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.state.runtime
    return runtime


async def _if_match(if_match: Annotated[str | None, Header()] = None) -> str | None:
    """The etag a client last read, from ``If-Match: "<etag>"`` (weak or strong).

    An empty header is refused (it is no precondition, and a client that sent it meant
    one), and so is one that is no etag: 400 saying what is wrong, never "changed since"."""
    if if_match is None:
        return None
    value = if_match.strip()
    if not value:
        raise InvalidInput('If-Match is empty: send the ETag you read, such as "3f2a..."')
    if value == "*":
        raise InvalidInput("If-Match: * is not supported: send the ETag you read")
    if value.startswith("W/"):
        value = value[2:]
    etag = value[1:-1] if len(value) >= 2 and value[0] == value[-1] == '"' else value
    if not _ETAG.fullmatch(etag):
        raise InvalidInput(
            f"If-Match {if_match[:60]!r} is not an ETag; send the ETag header of the entry "
            "you read (one quoted value)"
        )
    return etag


async def _if_none_match(
    if_none_match: Annotated[str | None, Header()] = None,
) -> tuple[str, ...] | None:
    """``If-None-Match`` on a change: ``("*",)`` or the ETags listed (weak ones too: the
    comparison is weak); a value that holds none is refused (400)."""
    if if_none_match is None:
        return None
    if if_none_match.strip() == "*":
        return ("*",)
    tags = tuple(part.strip().removeprefix("W/").strip('"') for part in if_none_match.split(","))
    if not tags or not all(_ETAG.fullmatch(tag) for tag in tags):
        raise InvalidInput(f"If-None-Match {if_none_match[:60]!r} is neither * nor a list of ETags")
    return tags


RuntimeDep = Annotated[Runtime, Depends(_runtime)]
IfMatchDep = Annotated[str | None, Depends(_if_match)]
IfNoneMatchDep = Annotated[tuple[str, ...] | None, Depends(_if_none_match)]


async def answer_challenge(
    request: Request,
    response: Response,
    challenge: Annotated[
        str | None,
        Header(
            alias=CHALLENGE_HEADER,
            pattern=CHALLENGE_PATTERN,
            description="A fresh random value; the answer's Somnid-Proof header is "
            "hex(HMAC-SHA256(token, 'somnid-proof-v2\\n' + challenge + '\\n' + address + "
            "'\\n' + port)) for the address and port this request reached (as somnid's "
            "socket saw them). The CLI checks it before it sends the token.",
        ),
    ] = None,
) -> None:
    """Prove, without sending it, that this process holds the token (see security.py)."""
    if challenge is None:
        return
    server = request.scope.get("server")
    host = str(server[0]) if server and server[0] is not None else ""
    port = int(server[1]) if server and server[1] is not None else 0
    response.headers[PROOF_HEADER] = token_proof(request.state.token, challenge, host, port)


_WITH_BODY = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def refuse_stray_body(connection: HTTPConnection) -> None:
    """A route that takes no body refuses one that is not JSON, as every route that takes
    one does (400 ``invalid_json``): ``POST .../complete`` with ``{"not json`` closed the
    intention and answered 200. A route with a body reads, and refuses, its own."""
    if not isinstance(connection, Request) or connection.method not in _WITH_BODY:
        return
    if getattr(connection.scope.get("route"), "body_field", True) is not None:
        return
    body = await connection.body()
    if body.strip():
        try:
            json.loads(body)
        except (ValueError, RecursionError):  # nested past the stack: no JSON a route reads
            raise InvalidInput("the request body is not valid JSON", code="invalid_json") from None
