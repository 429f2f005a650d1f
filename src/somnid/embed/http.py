"""`HttpEmbedder`: embeddings from an OpenAI-compatible ``POST {base_url}/embeddings`` endpoint.

Requests are ``{"model": ..., "input": [...]}``; the answer's ``data[i].embedding`` vectors
are put back in input order by their ``index``, checked against the expected dimension and
L2-normalised. Connection failures, 429 and 5xx answers are retried a bounded number of
times with exponential backoff (honouring a numeric ``Retry-After``); other failures raise
EmbedError at once. Embedding is idempotent, so retrying a request is safe.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from somnid.embed.base import EmbedError, Matrix, normalize_rows, text_list

__all__ = ["HttpEmbedder"]

_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
# Failures to connect, or a connection dropped under the request (stale keep-alive).
_RETRY_ERRORS = (httpx.NetworkError, httpx.ConnectTimeout, httpx.RemoteProtocolError)
_MAX_BACKOFF = 30.0
_BODY_EXCERPT = 200


class HttpEmbedder:
    """An Embedder backed by a remote (or local) OpenAI-compatible embeddings server.

    ``api_key`` is the key itself (the caller reads it from whichever environment variable
    its settings name); it is sent as a Bearer token and never appears in errors.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dim: int,
        api_key: str | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 64,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        name: str | None = None,
    ) -> None:
        if dim < 1 or batch_size < 1 or max_retries < 0 or backoff < 0 or timeout <= 0:
            raise ValueError("dim, batch_size, timeout must be positive; retries, backoff >= 0")
        self.name = name or model
        self.dim = dim
        self._model = model
        self._query_prefix = query_prefix
        self._passage_prefix = passage_prefix
        self._batch_size = batch_size
        self._max_retries = max_retries
        self._backoff = backoff
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._url = base_url.rstrip("/") + "/embeddings"
        self._client = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0))
        )

    def embed_passages(self, texts: Sequence[str]) -> Matrix:
        return self._embed(text_list(texts), self._passage_prefix)

    def embed_queries(self, texts: Sequence[str]) -> Matrix:
        return self._embed(text_list(texts), self._query_prefix)

    def close(self) -> None:
        self._client.close()

    def _embed(self, texts: list[str], prefix: str) -> Matrix:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            chunk = [prefix + text for text in texts[start : start + self._batch_size]]
            out[start : start + len(chunk)] = self._parse(self._post(chunk), len(chunk))
        return normalize_rows(out)

    def _post(self, inputs: list[str]) -> Any:
        payload = {"model": self._model, "input": inputs}
        attempt = 0
        while True:
            try:
                response = self._client.post(self._url, json=payload)
            except _RETRY_ERRORS as exc:
                failure = f"{type(exc).__name__}: {exc}"
                retry_after = None
            except httpx.HTTPError as exc:
                raise EmbedError(f"embedding request to {self._url} failed: {exc}") from exc
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError as exc:
                        raise EmbedError(f"{self._url} answered with invalid JSON") from exc
                failure = f"HTTP {response.status_code}: {response.text[:_BODY_EXCERPT]}"
                if response.status_code not in _RETRY_STATUS:
                    raise EmbedError(f"embedding request to {self._url} failed with {failure}")
                retry_after = _retry_after(response)
            if attempt >= self._max_retries:
                raise EmbedError(
                    f"embedding request to {self._url} failed after {attempt + 1} attempts; "
                    f"last error: {failure}"
                )
            delay = self._backoff * 2**attempt
            time.sleep(min(max(delay, retry_after or 0.0), _MAX_BACKOFF))
            attempt += 1

    def _parse(self, body: Any, count: int) -> Matrix:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != count:
            raise EmbedError(f"{self._url} returned no 'data' list of {count} embeddings")
        rows = np.zeros((count, self.dim), dtype=np.float32)
        seen: set[int] = set()
        for position, item in enumerate(data):
            if not isinstance(item, dict):
                raise EmbedError(f"{self._url} returned a malformed embedding entry")
            index = item.get("index", position)
            vector = item.get("embedding")
            if not isinstance(index, int) or not 0 <= index < count or index in seen:
                raise EmbedError(f"{self._url} returned a bad embedding index {index!r}")
            if not isinstance(vector, list):
                raise EmbedError(f"{self._url} returned a non-list embedding (base64?)")
            if len(vector) != self.dim:
                raise EmbedError(
                    f"{self._url} returned {len(vector)}-d embeddings for model "
                    f"{self._model!r}; expected {self.dim}"
                )
            try:
                rows[index] = np.asarray(vector, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise EmbedError(f"{self._url} returned a non-numeric embedding") from exc
            seen.add(index)
        if not np.isfinite(rows).all() or not np.abs(rows).sum(axis=1).all():
            raise EmbedError(f"{self._url} returned a zero or non-finite embedding")
        return rows


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # absent, or an HTTP date: fall back to our own backoff
