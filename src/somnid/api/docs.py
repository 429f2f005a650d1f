"""The API documentation pages, served offline: Swagger UI at ``/docs``, ReDoc at ``/redoc``.

FastAPI's own pages load their scripts from a CDN (unpinned, no integrity hash) into the
origin the guard trusts, and are blank without internet. Here the scripts and styles come
from the ``fastapi-offline`` package installed with somnid (pinned in ``pyproject.toml``),
served under ``/docs/assets/``; the pages need no network at all.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse

from somnid.api.assets import HeldStaticFiles

ASSETS = "/docs/assets"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
ASSET_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png")


def assets_dir() -> Path:
    """The folder of the packaged Swagger UI and ReDoc files."""
    return Path(str(importlib.resources.files("fastapi_offline") / "static"))


def install(app: FastAPI, openapi_url: str = "/openapi.json") -> None:
    """Add ``/docs``, ``/docs/oauth2-redirect``, ``/redoc`` and their assets to ``app``
    (built with ``docs_url=None, redoc_url=None``)."""
    title = f"{app.title} {app.version}"

    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            oauth2_redirect_url=OAUTH2_REDIRECT,
            swagger_ui_parameters={"persistAuthorization": False},
        )

    async def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{title} - ReDoc",
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS}/favicon.png",
            with_google_fonts=False,
        )

    app.add_api_route("/docs", swagger_ui, include_in_schema=False, methods=["GET"])
    app.add_api_route(OAUTH2_REDIRECT, oauth2_redirect, include_in_schema=False, methods=["GET"])
    app.add_api_route("/redoc", redoc, include_in_schema=False, methods=["GET"])
    app.mount(ASSETS, HeldStaticFiles(directory=assets_dir()), name="docs-assets")
