"""Request-scoped access to the runtime the lifespan opened."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from somnid.runtime import Runtime


def _runtime(request: Request) -> Runtime:
    runtime: Runtime = request.state.runtime
    return runtime


def _if_match(if_match: Annotated[str | None, Header()] = None) -> str | None:
    """The etag a client last read, from ``If-Match: "<etag>"`` (weak or strong)."""
    if if_match is None:
        return None
    value = if_match.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"') or None


RuntimeDep = Annotated[Runtime, Depends(_runtime)]
IfMatchDep = Annotated[str | None, Depends(_if_match)]
