"""``HEAD``: a ``GET`` whose answer is sent without its body.

FastAPI routes a ``HEAD`` to no ``GET`` route (405), so ``curl -I`` and link checkers saw
every resource refused. This pure ASGI middleware runs a ``HEAD`` as the ``GET`` it asks
about and sends the status and headers (``Content-Length`` and ``ETag`` included) with an
empty body. A route with no ``GET`` still answers 405.
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

        async def headers_only(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the rest of the body follows: none of it is sent
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)
