"""The daemon's listening socket: answers are not held back by Nagle's algorithm."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from somnid.config import Settings
from somnid.server.daemon import _bind


async def _accepted_nodelay(sock: socket.socket) -> int:
    """TCP_NODELAY on the server's side of a connection asyncio accepts on ``sock``."""
    loop = asyncio.get_running_loop()
    seen: asyncio.Future[int] = loop.create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted = transport.get_extra_info("socket")
            seen.set_result(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await loop.create_server(Probe, sock=sock)
    try:
        port = sock.getsockname()[1]
        _reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(seen, 30)
        finally:
            writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_connections_answer_without_nagle(tmp_path: Path) -> None:
    # With Nagle on, an answer's body (h11's second write) waited for the client's delayed
    # ACK of its head: 40 ms on every request of a kept-alive connection but the first.
    settings = Settings(data_dir=tmp_path / "data", host="127.0.0.1", port=0)
    sock = _bind(settings)
    assert sock.proto == socket.IPPROTO_TCP
    assert asyncio.run(_accepted_nodelay(sock)) != 0
