"""One JSON POST with bounded retries, shared by the HTTP backends (callback, OpenAI).

Retried, with exponential backoff (honouring a numeric ``Retry-After``): failures to connect,
a connection dropped under the request, 429 and 5xx answers; when the retries are spent,
LLMUnavailable. Never retried: any other 4xx (LLMRejected at once) and a timeout (LLMTimeout
at once: a model that used the whole timeout once will likely do so again, and every try
costs a full request). Cancelling the awaiting task aborts the request or the backoff sleep
at once. A chat request has no side effects, so sending it again is safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from somnid.dream.llm.base import LLMBadResponse, LLMRejected, LLMTimeout, LLMUnavailable
from somnid.memory.scrub import scrub

__all__ = ["HttpPoster", "RetryPolicy"]

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_RETRY_ERRORS = (httpx.NetworkError, httpx.ConnectTimeout, httpx.RemoteProtocolError)
_BODY_EXCERPT = 300
MAX_ANSWER_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    retries: int = 2  # at most three attempts
    backoff_s: float = 0.5  # the first wait; doubles after each attempt
    max_backoff_s: float = 10.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        wait = self.backoff_s * 2.0**attempt
        return min(max(wait, retry_after or 0.0), self.max_backoff_s)


class _Retryable(Exception):
    def __init__(self, failure: str, retry_after: float | None = None) -> None:
        super().__init__(failure)
        self.failure = failure
        self.retry_after = retry_after


class HttpPoster:
    """POSTs JSON to one URL and returns the decoded JSON object, or raises LLMError.

    ``timeout_s`` bounds each attempt as a whole (connect, wait, read). A fresh client per
    request: an LLM call lasts seconds, so pooling buys nothing, and nothing needs closing.
    The TLS context is built once here (building it per client would block the event loop
    for ~30 ms each time).
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float,
        headers: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        self.url = url
        self.timeout_s = timeout_s
        self._headers = dict(headers or {})
        self._secrets = tuple(
            value.split(" ", 1)[-1]
            for key, value in self._headers.items()
            if key.lower() == "authorization"
        )
        self._retry = retry or RetryPolicy()
        self._ssl = httpx.create_ssl_context()

    async def post(
        self, payload: Mapping[str, Any], *, timeout_s: float | None = None
    ) -> dict[str, Any]:
        """``timeout_s`` replaces the configured timeout for this request. A request that
        runs out of time is abandoned whole: its connection is closed (a server that
        watches its sockets stops computing the answer)."""
        attempt = 0
        while True:
            try:
                return await self._attempt(payload, timeout_s or self.timeout_s)
            except _Retryable as exc:
                if attempt >= self._retry.retries:
                    raise LLMUnavailable(
                        f"POST {self.url} failed after {attempt + 1} attempt(s); "
                        f"last error: {exc.failure}"
                    ) from None
                await asyncio.sleep(self._retry.delay(attempt, exc.retry_after))
                attempt += 1

    async def _read(self, response: httpx.Response) -> bytes:
        """The answer's body, refused past :data:`MAX_ANSWER_BYTES`: a chat reply is a few
        kB, and an endpoint that streams garbage must not fill the daemon's memory."""
        limit = f"{self.url} answered with more than {MAX_ANSWER_BYTES // 2**20} MiB"
        with contextlib.suppress(ValueError):
            if int(response.headers.get("content-length", "0")) > MAX_ANSWER_BYTES:
                raise LLMBadResponse(limit)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_ANSWER_BYTES:
                raise LLMBadResponse(limit)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _attempt(self, payload: Mapping[str, Any], timeout_s: float) -> dict[str, Any]:
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
        try:
            async with (
                asyncio.timeout(timeout_s),
                httpx.AsyncClient(timeout=timeout, verify=self._ssl) as client,
                client.stream("POST", self.url, json=payload, headers=self._headers) as response,
            ):
                raw = await self._read(response)
        except _RETRY_ERRORS as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise LLMTimeout(f"POST {self.url}: no answer within {timeout_s:g} s") from exc
        except httpx.HTTPError as exc:
            raise LLMUnavailable(f"POST {self.url} failed: {type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status >= 300:
            said = raw[: _BODY_EXCERPT * 8].decode("utf-8", "replace")  # beyond the cut, whole
            failure = f"HTTP {status}: {_excerpt(self.shown(said))}"
            if status in _RETRY_STATUS:
                raise _Retryable(failure, _retry_after(response))
            if status < 400:  # a redirect (a login page, an http → https move): not followed
                raise LLMUnavailable(
                    f"POST {self.url} was redirected ({failure}); set the endpoint's own URL"
                )
            raise LLMRejected(f"POST {self.url} was refused with {failure}")
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # not JSON, or nested past the stack
            raise LLMBadResponse(f"{self.url} answered with invalid JSON") from exc
        if not isinstance(body, dict):
            raise LLMBadResponse(f"{self.url} answered with a JSON {type(body).__name__}")
        return body

    def shown(self, text: str) -> str:
        """``text`` from the endpoint (an error's message), fit to be shown and kept: the
        key sent (an endpoint may echo it: "Incorrect API key provided: sk-…") and any
        other secret shape scrubbed; it goes to the dream's journal and history."""
        return scrub(text, known=self._secrets)


def _excerpt(said: str) -> str:
    """What an endpoint said, on one line, cut (scrub it first: a key cut in two is no
    longer found whole)."""
    text = " ".join(said.split())
    return text if len(text) <= _BODY_EXCERPT else text[:_BODY_EXCERPT] + "…"


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None  # absent, or an HTTP date: our own backoff will do
