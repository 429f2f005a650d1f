"""``create_app(settings)``: the FastAPI app, built from arguments alone; nothing at import."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from concurrent.futures import Future
from typing import Any

from fastapi import Depends, FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.routing import APIRoute

from somnid import __version__
from somnid.api import docs, errors
from somnid.api.actor import ActorContext
from somnid.api.deps import refuse_stray_body
from somnid.api.errors import PROBLEM_JSON
from somnid.api.exporter import Exporter
from somnid.api.guard import PUBLIC_PATHS, Guard
from somnid.api.head import HeadAsGet
from somnid.api.limits import RequestLimits
from somnid.api.mcp import McpEndpoint
from somnid.api.observe import Observe
from somnid.api.routes import (
    assoc,
    awake,
    bridge,
    health,
    history,
    maintenance,
    memories,
    metrics,
    recall,
    sessions,
    sleep,
    sync,
)
from somnid.api.schemas.common import ERROR_RESPONSES
from somnid.config import Settings
from somnid.embed.base import Embedder
from somnid.logs import redact_secret
from somnid.memory.clock import Clock
from somnid.runtime import Runtime
from somnid.security import HostPolicy, load_or_create_token
from somnid.store.lock import DataDirLock
from somnid.ui import routes as ui_routes
from somnid.ui.session import UISessions

DESCRIPTION = """\
somnid keeps an agent's memory as Markdown files with YAML front-matter and serves it here.

Every error has one shape: RFC 9457 problem details with a stable `code`.
Writes are atomic; retired entries are archived, and nothing is deleted but by an explicit,
audited purge.
"""


def _operation_id(route: APIRoute) -> str:
    return route.name


def create_app(
    settings: Settings,
    *,
    clock: Clock | None = None,
    lock: DataDirLock | None = None,
    embedder: Embedder | None = None,
    model_load: Future[Embedder | None] | None = None,
) -> FastAPI:
    mcp = McpEndpoint()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, object]]:
        async with (
            Runtime.open(
                settings, clock=clock, lock=lock, embedder=embedder, model_load=model_load
            ) as runtime,
            mcp.serving(runtime.tools),
        ):
            app.state.runtime = runtime
            token = load_or_create_token(settings)
            redact_secret(token)  # no log line shows it, not even uvicorn's websocket lines
            yield {"runtime": runtime, "token": token, "ui_sessions": UISessions()}

    app = FastAPI(
        title="somnid",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
        docs_url=None,  # served offline by somnid.api.docs
        redoc_url=None,
        dependencies=[Depends(refuse_stray_body)],
    )
    errors.install(app)
    app.state.exporter = exporter = Exporter(__version__)
    app.add_middleware(HeadAsGet)  # innermost: HEAD is the GET it asks about, without a body
    app.add_middleware(ActorContext)  # the route's writes know who asked
    app.add_middleware(RequestLimits, max_body_bytes=settings.max_body_bytes)
    if settings.allowed_origins:  # inside the door: a preflight's Host and Origin are checked
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.allowed_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["ETag", "Location", "X-Request-Id"],
        )
    app.add_middleware(Guard, policy=HostPolicy.from_settings(settings))
    app.add_middleware(Observe, exporter=exporter)  # outermost: its id is on every answer
    for module in (health, memories, maintenance, recall, assoc, sessions, awake, sleep, bridge):
        app.include_router(module.router, responses=ERROR_RESPONSES)
    app.include_router(metrics.router, responses=ERROR_RESPONSES)
    app.include_router(history.router, responses=ERROR_RESPONSES)
    app.include_router(sync.router, responses=ERROR_RESPONSES)
    app.router.routes.append(mcp.route())
    docs.install(app)
    ui_routes.install(app)  # the memory browser at /ui
    _openapi_contract(app)
    return app


def summary_of(operation_id: str) -> str:
    """``listMemories`` -> ``List memories``: what Swagger UI shows beside each operation."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", operation_id).split()
    text = " ".join(word if word.isupper() and len(word) > 1 else word.lower() for word in words)
    return text[:1].upper() + text[1:]


def _openapi_contract(app: FastAPI) -> None:
    """Declare error bodies as ``application/problem+json``, which is what is sent, and
    the bearer token every operation but the public ones needs (Swagger's Authorize)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = build()
            components = document.setdefault("components", {})
            components.setdefault("securitySchemes", {})["bearer"] = {
                "type": "http",
                "scheme": "bearer",
                "description": "The token in <data dir>/token (`somnid token` prints it).",
            }
            document["security"] = [{"bearer": []}]
            for path, operations in document.get("paths", {}).items():
                for operation in operations.values():
                    operation_id = operation.get("operationId", "")
                    if operation.get("summary") == operation_id.replace("_", " ").title():
                        operation["summary"] = summary_of(operation_id)  # not "Listmemories"
                    if path in PUBLIC_PATHS:
                        operation["security"] = []
                    for status, response in operation.get("responses", {}).items():
                        content = response.get("content", {})
                        if status in ERROR_RESPONSES and "application/json" in content:
                            response["content"] = {PROBLEM_JSON: content["application/json"]}
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
