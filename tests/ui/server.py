"""The real app served by uvicorn in a thread on a free loopback port, for a real browser."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from tests.daemon import free_port


class _Server(uvicorn.Server):
    loop: asyncio.AbstractEventLoop | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield  # leave pytest's signal handlers alone

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.loop = asyncio.get_running_loop()
        await super().startup(sockets)


@contextlib.contextmanager
def serve(app: FastAPI, port: int | None = None) -> Iterator[str]:
    """``port``: the one a server before this one had (a restart); a free one if None."""
    port = port or free_port()
    server = _Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120  # a cap for a hang: a loaded machine is slow
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        # As the daemon does on a signal (server/daemon.py): the event streams end first, or
        # one a page holds open keeps the server from stopping.
        runtime = getattr(app.state, "runtime", None)
        if runtime is not None and server.loop is not None:
            with contextlib.suppress(RuntimeError):
                server.loop.call_soon_threadsafe(runtime.dreamer.events.close)
        server.should_exit = True
        thread.join(timeout=20)
