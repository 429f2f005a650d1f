"""Run the app under uvicorn with a written shutdown budget.

Shutdown order on SIGTERM / SIGINT: uvicorn stops accepting connections, waits up to
``shutdown_timeout_s`` for requests in flight, cancels the rest, then the lifespan closes
the runtime in reverse order of opening and releases the data-dir lock.

Under systemd (``Type=notify``) the daemon says ``READY=1`` once it listens (after the
lifespan has opened the runtime), ``STOPPING=1`` as shutdown begins, keeps ``STATUS=`` up to
date for ``systemctl status``, and pings ``WATCHDOG=1`` from the event loop when
``WatchdogSec=`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import signal
import socket
from collections.abc import Iterator
from concurrent.futures import Future
from types import FrameType

import uvicorn
from fastapi import FastAPI

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.embed.base import Embedder
from somnid.errors import Conflict
from somnid.notify import Watchdog, notify
from somnid.server import daemon_file
from somnid.server.connections import GuardedH11, accept_backlog
from somnid.server.websocket import ProblemWebSockets
from somnid.store.lock import DataDirLock
from somnid.store.modes import PRIVATE_UMASK, make_private

log = logging.getLogger(__name__)


class _Server(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: FastAPI, settings: Settings) -> None:
        super().__init__(config)
        self._somnid_app = app
        self._settings = settings
        self._watchdog = Watchdog()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        notify(f"STATUS=starting: opening {self._settings.data_dir}")
        await super().startup(sockets)
        if self.started:
            address = self._address()
            notify("READY=1", f"STATUS=serving {address} from {self._settings.data_dir}")
            host, _, port = address.removeprefix("http://").rpartition(":")
            with contextlib.suppress(OSError):
                daemon_file.write(
                    self._settings.data_dir,
                    daemon_file.Listening(address, host.strip("[]"), int(port), os.getpid()),
                )
            log.info(
                "listening on %s: the API and its docs at %s/docs, the memory browser at "
                "%s/ui (log in with the token `somnid token` prints)",
                address, address, address,
            )  # fmt: skip

    def _address(self) -> str:
        """Where it listens (the real port, also when port 0 let the kernel choose)."""
        host, port = self._settings.host, self._settings.port
        for server in self.servers:
            for sock in server.sockets:
                host, port = sock.getsockname()[:2]
                break
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"

    async def on_tick(self, counter: int) -> bool:
        self._watchdog.tick()  # from the loop itself: a loop that stops turning stops pinging
        return await super().on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        notify(
            "STOPPING=1",
            f"STATUS=stopping: draining requests (up to {self._settings.shutdown_timeout_s} s)",
        )
        daemon_file.remove(self._settings.data_dir, os.getpid())
        await super().shutdown(sockets)

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
        # SIGHUP too: a terminal closed under `somnid serve` killed it without its
        # shutdown (its writes' history and daemon file left to the next start). Not where
        # it is ignored: `nohup somnid serve &` means to outlive the terminal.
        hangup = () if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN else (signal.SIGHUP,)
        handled = (signal.SIGINT, signal.SIGTERM, *hangup)
        originals = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


def _repair_modes(settings: Settings) -> None:
    repaired = make_private(settings.data_dir)
    if repaired:
        shown = ", ".join(str(path) for path in repaired[:5])
        more = f" and {len(repaired) - 5} more" if len(repaired) > 5 else ""
        log.warning(
            "repaired the modes of %d paths other local users could read: %s%s",
            len(repaired),
            shown,
            more,
        )


def serve(settings: Settings, model_load: Future[Embedder | None] | None = None) -> int:
    """Serve until signalled; returns the process exit status. ``model_load``: the model,
    loading since before this module was imported (``load_early``)."""
    os.umask(PRIVATE_UMASK)  # every folder 0700 and file 0600, whatever the login's umask
    lock = DataDirLock(settings.data_dir)
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    lock.acquire()  # fail fast, before uvicorn starts, with a clear message
    try:
        # Bound before anything opens: a taken port is one line, not a start-up that logs
        # "Application startup complete" and then fails to listen.
        sock = _bind(settings)
    except BaseException:
        lock.release()
        raise
    try:
        _repair_modes(settings)
        app = create_app(settings, lock=lock, model_load=model_load)
        config = uvicorn.Config(
            app,
            host=settings.host,
            port=settings.port,
            lifespan="on",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=settings.shutdown_timeout_s,
            server_header=False,
            backlog=accept_backlog(),
            ws=ProblemWebSockets,
            http=GuardedH11.configured(
                header_timeout=settings.header_timeout_s,
                body_timeout=settings.body_timeout_s,
                write_timeout=settings.write_timeout_s,
                max_connections=settings.max_connections,
            ),
        )
        server = _Server(config, app, settings)
        try:
            server.run(sockets=[sock])
        except SystemExit:
            # uvicorn exits 3 when it cannot listen (the port is taken) or the app does not
            # start; 3 is ours for "data dir locked", so say 1: could not start.
            if server.started:
                raise
            return 1
        return 0 if server.started else 1
    finally:
        sock.close()
        lock.release()


def _bind(settings: Settings) -> socket.socket:
    """The listening address, bound (uvicorn listens on it once the app has started).

    Made as a TCP socket by name: asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only
    on connections whose socket says ``IPPROTO_TCP``, and a plain ``socket.socket()`` says 0.
    With Nagle on, the second write of an answer (h11 writes the head, then the body) waited
    for the client's delayed ACK: every request but a connection's first took 40 ms more."""
    host, port = settings.host, settings.port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        why = exc.strerror or str(exc)
        hint = (
            ": another program (or another somnid) listens there; choose another port with "
            "--port or SOMNID_PORT"
            if exc.errno == errno.EADDRINUSE
            else ""
        )
        notify(f"STATUS=cannot listen on {shown}: {why}")
        raise Conflict(f"cannot listen on {shown}: {why}{hint}", code="cannot_listen") from None
    return sock
