"""Run the app under uvicorn with a written shutdown budget.

Shutdown order on SIGTERM / SIGINT: uvicorn stops accepting connections, waits up to
``shutdown_timeout_s`` for requests in flight, cancels the rest, then the lifespan closes
the runtime in reverse order of opening and releases the data-dir lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

import uvicorn
from fastapi import FastAPI

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.store.lock import DataDirLock


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self._somnid_app = app

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # uvicorn drains connections before the app hears of the shutdown: end the event
        # streams first, or every open one would hold shutdown for the whole budget.
        runtime = getattr(self._somnid_app.state, "runtime", None)
        if runtime is not None:
            with contextlib.suppress(RuntimeError):
                asyncio.get_running_loop().call_soon_threadsafe(runtime.dreamer.events.close)
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Like uvicorn's, minus re-raising the signal after a graceful shutdown: a daemon
        that drained and closed everything exits 0."""
        handled = (signal.SIGINT, signal.SIGTERM)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def serve(settings: Settings) -> int:
    """Serve until signalled; returns the process exit status."""
    lock = DataDirLock(settings.data_dir)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    lock.acquire()  # fail fast, before uvicorn starts, with a clear message
    try:
        app = create_app(settings, lock=lock)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
            server_header=False,
        )
        server = _Server(config, app)
        server.run()
        return 0 if server.started else 1
    finally:
        lock.release()
