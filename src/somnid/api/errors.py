"""One error shape for every response that is not a success: RFC 9457 problem details.

    {"type": "urn:somnid:problem:<code>", "title": ..., "status": ..., "detail": ...,
     "code": "<code>", "instance": "<path>", "errors": [...]?}

Every SomnidError is mapped to its status here and only here. Bad input never produces a
500; an unexpected failure produces a 500 in the same shape without a traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Send

from somnid import errors

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"
UNEXPECTED = "somnid hit an unexpected error; see its log"
MAX_INSTANCE = 512

_STATUS: list[tuple[type[errors.SomnidError], int]] = [
    (errors.InvalidArguments, 422),
    (errors.InvalidInput, 400),
    (errors.FolderAway, 503),
    (errors.NotFound, 404),
    (errors.Conflict, 409),
    (errors.PreconditionFailed, 412),
    (errors.BrokenFile, 409),
    (errors.DataDirLocked, 503),
    (errors.Unavailable, 503),
]
_STORAGE_STATUS = {"disk_full": 507, "read_only": 503}
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "body_too_large",
    415: "unsupported_media_type",
}


def status_of(exc: errors.SomnidError) -> int:
    if isinstance(exc, errors.StorageError):
        return _STORAGE_STATUS.get(exc.code, 503)
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def problem_body(
    status: int, code: str, detail: str, *, instance: str | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "type": f"urn:somnid:problem:{code}",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if instance is not None:  # a path of 70 kB is not echoed whole
        body["instance"] = (
            instance if len(instance) <= MAX_INSTANCE else instance[:MAX_INSTANCE] + "…"
        )
    body.update({key: value for key, value in extra.items() if value is not None})
    return body


async def send_problem(
    send: Send,
    status: int,
    code: str,
    detail: str,
    *,
    instance: str | None = None,
    headers: Sequence[tuple[bytes, bytes]] = (),
    websocket: bool = False,
) -> None:
    """Answer a problem from an ASGI middleware, before (or instead of) the app. With
    ``websocket`` it is the denial response of a refused handshake."""
    payload = json.dumps(problem_body(status, code, detail, instance=instance)).encode()
    prefix = "websocket.http.response" if websocket else "http.response"
    head = [
        (b"content-type", PROBLEM_JSON.encode()),
        (b"content-length", str(len(payload)).encode()),
        *headers,
    ]
    await send({"type": f"{prefix}.start", "status": status, "headers": head})
    await send({"type": f"{prefix}.body", "body": payload})


def problem(
    status: int,
    code: str,
    detail: str,
    *,
    instance: str | None = None,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = problem_body(status, code, detail, instance=instance, **extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


async def _somnid_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, errors.SomnidError)
    runtime = getattr(request.state, "runtime", None)
    if isinstance(exc, errors.StorageError) and runtime is not None:
        runtime.status.storage_failed(exc)  # a session log's append, too: health says so
    status = status_of(exc)
    headers = {"ETag": f'"{exc.extra["etag"]}"'} if "etag" in exc.extra else None
    extra = {key: value for key, value in exc.extra.items() if key != "etag"}
    return problem(
        status, exc.code, exc.detail, instance=request.url.path, headers=headers, **extra
    )


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    issues = []
    for error in exc.errors():
        location = [str(part) for part in error.get("loc", ())]
        issues.append({"field": ".".join(location), "message": error.get("msg", "invalid")})
        if error.get("type") == "json_invalid":
            return problem(
                400, "invalid_json", "the request body is not valid JSON", instance=request.url.path
            )
    fields = ", ".join(issue["field"] for issue in issues)
    return problem(
        422,
        "validation_error",
        f"the request is not valid: {fields}",
        instance=request.url.path,
        errors=issues,
    )


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, "http_error")
    detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
    if exc.status_code == 404 and detail == "Not Found":
        detail = f"no route {request.method} {request.url.path}"
    if exc.status_code == 400 and isinstance(exc.__cause__, ValueError | RecursionError):
        # FastAPI's "error parsing the body": bytes that are not UTF-8, JSON nested too deep.
        code, detail = "invalid_json", "the request body is not valid JSON"
    headers = exc.headers
    allowed = _allowed_methods(request) if exc.status_code == 405 else ""
    if allowed:
        headers = {**(headers or {}), "Allow": allowed}
        detail = f"{request.method} is not served here; use {allowed}"
    return problem(exc.status_code, code, detail, instance=request.url.path, headers=headers)


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path: Starlette's 405 names only the first
    route that matched, and each method of a path is its own route here."""
    scope = request.scope
    allowed = []
    for method in _METHODS:
        probe = {
            key: scope[key] for key in ("type", "path", "root_path", "headers") if key in scope
        }
        probe["method"] = method
        if any(route.matches(probe)[0] is Match.FULL for route in request.app.router.routes):
            allowed.append(method)
        elif method == "HEAD" and "GET" in allowed:
            allowed.append(method)  # HeadAsGet serves a HEAD of every GET
    return ", ".join(allowed)


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, PermissionError):  # a file or folder a person took from somnid
        log.warning("%s %s: %s", request.method, request.url.path, exc)
        where = exc.filename or "a file in the data dir"
        detail = f"somnid may not read or write {where}; give it back (chmod u+rw, folders u+rwx)"
        return problem(503, "storage_error", detail, instance=request.url.path)
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return problem(
        500,
        "internal_error",
        UNEXPECTED,
        instance=request.url.path,
    )


def install(app: FastAPI) -> None:
    app.add_exception_handler(errors.SomnidError, _somnid_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(Exception, _unexpected)
