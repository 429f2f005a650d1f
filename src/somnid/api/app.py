"""``create_app(settings)``: the FastAPI app, built from arguments alone; nothing at import."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from fastapi import FastAPI
from fastapi.routing import APIRoute

from somnid import __version__
from somnid.api import errors
from somnid.api.limits import RequestLimits
from somnid.api.routes import health, maintenance, memories
from somnid.config import Settings
from somnid.memory.clock import Clock
from somnid.runtime import Runtime
from somnid.store.lock import DataDirLock

DESCRIPTION = """\
somnid keeps an agent's memory as Markdown files with YAML front-matter and serves it here.

Every error has one shape: RFC 9457 problem details with a stable `code`.
Writes are atomic; nothing is ever deleted (retired entries are archived).
"""


def _operation_id(route: APIRoute) -> str:
    return route.name


def create_app(
    settings: Settings, *, clock: Clock | None = None, lock: DataDirLock | None = None
) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Runtime]]:
        async with Runtime.open(settings, clock=clock, lock=lock) as runtime:
            app.state.runtime = runtime
            yield {"runtime": runtime}

    app = FastAPI(
        title="somnid",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        generate_unique_id_function=_operation_id,
    )
    errors.install(app)
    app.add_middleware(RequestLimits, max_body_bytes=settings.max_body_bytes)
    for module in (health, memories, maintenance):
        app.include_router(module.router)
    return app
