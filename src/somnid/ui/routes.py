"""The memory browser at ``/ui``: its page and assets from the package, and its login.

The page and assets are public (they hold no data); everything it shows comes from the
``/v1`` routes, authorised by the cookie ``POST /ui/login`` sets (see
:mod:`somnid.ui.session`). Not part of the API contract (no OpenAPI entries).
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, Field

from somnid.api.assets import HeldStaticFiles
from somnid.api.errors import problem
from somnid.errors import InvalidInput
from somnid.security import token_matches
from somnid.ui import static_dir
from somnid.ui.session import (
    UI_HEADER,
    UISessions,
    clear_cookie_header,
    cookie_value,
    set_cookie_header,
)

router = APIRouter(include_in_schema=False)
_NO_STORE = {"Cache-Control": "no-store"}
_PAGE_HEADERS = {
    **_NO_STORE,
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


class Login(BaseModel):
    token: str = Field(min_length=1, max_length=500)


@router.get("/ui")
async def page() -> FileResponse:
    return FileResponse(static_dir() / "index.html", headers=_PAGE_HEADERS)


@router.post("/ui/login")
async def login(body: Login, request: Request) -> Response:
    """A new session: its id in the cookie, its page key in the answer (``{"key"}``), which
    the page sends with every request (see :mod:`somnid.ui.session`)."""
    if request.headers.get(UI_HEADER) != "1":
        raise InvalidInput("the login must come from the memory browser (X-Somnid-UI: 1)")
    expected = getattr(request.state, "token", None)
    sessions = getattr(request.state, "ui_sessions", None)
    if not isinstance(expected, str) or not token_matches(expected, body.token):
        return problem(
            401, "unauthorized", "that is not the token (`somnid token` prints it)",
            instance=request.url.path,
        )  # fmt: skip
    if not isinstance(sessions, UISessions):
        return problem(
            503, "unavailable", "the memory browser's sessions are not ready",
            instance=request.url.path,
        )  # fmt: skip
    value, key = sessions.open(expected)
    return JSONResponse(
        {"key": key},
        headers={"Set-Cookie": set_cookie_header(value, sessions.max_age_s), **_NO_STORE},
    )


@router.post("/ui/logout", status_code=204)
async def logout(request: Request) -> Response:
    """Ends the session the cookie names, with its page key (a copy of the cookie is
    refused from then on; the cookie alone, which any local service may hold, ends nothing)."""
    sessions = getattr(request.state, "ui_sessions", None)
    headers = dict(request.headers)
    if not isinstance(sessions, UISessions) or not sessions.close(
        cookie_value(headers), headers.get(UI_HEADER)
    ):
        return problem(
            401, "unauthorized", "no session of this page to end", instance=request.url.path
        )
    return Response(status_code=204, headers={"Set-Cookie": clear_cookie_header()})


def install(app: FastAPI) -> None:
    app.include_router(router)
    app.mount("/ui/assets", HeldStaticFiles(directory=static_dir()), name="ui-assets")
