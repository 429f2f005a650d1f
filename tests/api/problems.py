"""The one error shape, pinned: every non-2xx answer of somnid looks like this."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ResponseLike(Protocol):
    """httpx's Response, or the TestClient's (Starlette 1.x ships its own httpx fork)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...
    @property
    def text(self) -> str: ...
    def json(self) -> Any: ...


PROBLEM_KEYS = {"type", "title", "status", "detail", "code", "instance"}


def assert_problem(response: ResponseLike, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body: dict[str, Any] = response.json()
    assert PROBLEM_KEYS <= set(body), body
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"] == f"urn:somnid:problem:{code}"
    assert isinstance(body["detail"], str) and body["detail"]
    assert "Traceback" not in response.text
    return body
