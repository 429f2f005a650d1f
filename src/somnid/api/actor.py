"""Who makes a request, for the history: the route and the agent and session it names.

A pure ASGI middleware (the context variable then reaches the route and the threads it
starts). ``X-Somnid-Session`` names a session; the UI's requests say ``X-Somnid-UI``.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from somnid.provenance import Actor, acting

_SAFE = frozenset({"GET", "HEAD", "OPTIONS"})


class ActorContext:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in _SAFE:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        source = "ui" if "x-somnid-ui" in headers else "api"
        actor = Actor(
            source,
            f"{scope['method']} {scope['path']}"[:200],
            agent=headers.get("user-agent"),
            session=headers.get("x-somnid-session"),
        )
        with acting(actor):
            await self.app(scope, receive, send)
