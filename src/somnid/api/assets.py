"""Packaged static files (the API docs' scripts, the memory browser's assets) served from
memory.

Starlette's ``StaticFiles`` keeps a file open for as long as its answer takes to send. An
answer to a client that does not read takes until the write deadline (see
:mod:`somnid.server.connections`), so each such connection held two descriptors, not one:
sixteen of them asking for the Swagger bundle (1.5 MB) under a file limit of 64 made
accepting fail for want of a descriptor. Here a file is read once (they are the package's
own, a few MB in all) and sent from memory in the same 64 KB pieces, with the same
``ETag``, ``Last-Modified`` and ``304 Not Modified``; a file that changed on disk is read
again. Ranges are not offered (``Accept-Ranges: none``): these files are small enough to
fetch whole.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

import anyio.to_thread
from starlette.datastructures import Headers
from starlette.responses import FileResponse, Response
from starlette.staticfiles import NotModifiedResponse, PathLike, StaticFiles
from starlette.types import Receive, Scope, Send

CHUNK = 64 * 1024
HELD_AT_MOST = 8 * 1024 * 1024  # larger files (none today) are sent from disk as before


@dataclass(frozen=True)
class _Held:
    mtime_ns: int
    size: int
    data: bytes


class HeldStaticFiles(StaticFiles):
    """``StaticFiles`` whose answers hold no file open while they are sent."""

    def __init__(self, *, directory: PathLike) -> None:
        super().__init__(directory=directory)
        self._held: dict[str, _Held] = {}

    def file_response(
        self,
        full_path: PathLike,
        stat_result: os.stat_result,
        scope: Scope,
        status_code: int = 200,
    ) -> Response:
        response = FileResponse(full_path, status_code=status_code, stat_result=stat_result)
        if self.is_not_modified(response.headers, Headers(scope=scope)):
            return NotModifiedResponse(response.headers)
        if stat_result.st_size > HELD_AT_MOST:
            return response
        return _FromMemory(self, str(full_path), stat_result, response.headers, status_code)

    async def held(self, path: str, stat_result: os.stat_result) -> bytes:
        """The file's bytes, read again only if its size or time changed."""
        held = self._held.get(path)
        if held is None or (held.mtime_ns, held.size) != (
            stat_result.st_mtime_ns,
            stat_result.st_size,
        ):
            data = await anyio.to_thread.run_sync(_read, path)
            held = _Held(stat_result.st_mtime_ns, stat_result.st_size, data)
            self._held[path] = held
        return held.data


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


class _FromMemory(Response):
    def __init__(
        self,
        files: HeldStaticFiles,
        path: str,
        stat_result: os.stat_result,
        headers: Mapping[str, str],
        status_code: int,
    ) -> None:
        self.status_code = status_code
        self.background = None
        self._files = files
        self._path = path
        self._stat = stat_result
        self.init_headers({**headers, "accept-ranges": "none"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        data = await self._files.held(self._path, self._stat)
        if len(data) != self._stat.st_size:  # changed between the stat and the read
            self.headers["content-length"] = str(len(data))
        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        if scope["method"].upper() == "HEAD" or not data:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        view = memoryview(data)
        for start in range(0, len(view), CHUNK):
            end = start + CHUNK
            await send(
                {
                    "type": "http.response.body",
                    "body": bytes(view[start:end]),
                    "more_body": end < len(view),
                }
            )
