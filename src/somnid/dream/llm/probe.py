"""Is an HTTP LLM endpoint reachable? One quick GET, for ``/v1/sleep/status``.

Any HTTP answer means something listens (a callback URL may well answer a GET with 405);
only a refused, failed or silent connection, or a 5xx, counts as unreachable; so does a 401
or 403 to a probe that sent credentials (the key is refused: every dream would fail). The
answer's body is never read (an endpoint answered 400 MB once). The answer is cached for a
few seconds, so a status page polled every second costs one probe.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import httpx

PROBE_TIMEOUT_S = 3.0
CACHE_S = 10.0


class Probe:
    """Probes ``url`` with GET, at most once every :data:`CACHE_S` seconds."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout_s: float = PROBE_TIMEOUT_S,
        cache_s: float = CACHE_S,
    ) -> None:
        self.url = url
        self._headers = dict(headers or {})
        self._timeout_s = timeout_s
        self._cache_s = cache_s
        self._last: tuple[float, str | None] | None = None
        self._lock = asyncio.Lock()

    async def __call__(self) -> str | None:
        async with self._lock:
            now = time.monotonic()
            if self._last is not None and now - self._last[0] < self._cache_s:
                return self._last[1]
            problem = await self._probe()
            self._last = (time.monotonic(), problem)
            return problem

    def forget(self) -> None:
        """Probe again next time (a chat just failed or worked)."""
        self._last = None

    async def _probe(self) -> str | None:
        try:
            async with (
                asyncio.timeout(self._timeout_s),
                httpx.AsyncClient(timeout=self._timeout_s) as client,
                client.stream("GET", self.url, headers=self._headers) as response,
            ):
                status = response.status_code  # the body is left unread
        except (TimeoutError, httpx.TimeoutException):
            return f"GET {self.url}: no answer within {self._timeout_s:g} s"
        except httpx.HTTPError as exc:
            return f"GET {self.url} failed: {type(exc).__name__}"
        if status >= 500:
            return f"GET {self.url} answered HTTP {status}"
        if status in (401, 403) and any(k.lower() == "authorization" for k in self._headers):
            return f"GET {self.url} answered HTTP {status}: the API key was refused"
        return None
