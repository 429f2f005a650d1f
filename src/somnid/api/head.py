"""``HEAD``: a ``GET`` whose answer is sent without its body.

FastAPI routes a ``HEAD`` to no ``GET`` route (405), so ``curl -I`` and link checkers saw
every resource refused. This pure ASGI middleware runs a ``HEAD`` as the ``GET`` it asks
about and sends the status and headers (``Content-Length`` and ``ETag`` included) with an
empty body, as soon as the headers are known: the answer is complete then, and the route
is told the client has gone (a stream, ``/v1/sleep/events``, ends instead of holding the
connection). A route with no ``GET`` still answers 405.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        answered = False

        async def headers_only(message: Message) -> None:
            nonlocal answered
            if answered:
                return  # the body: never sent
            await send(message)
            if message["type"] == "http.response.start":
                answered = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        async def until_answered() -> Message:
            if answered:
                return {"type": "http.disconnect"}
            return await receive()

        await self.app({**scope, "method": "GET"}, until_answered, headers_only)
