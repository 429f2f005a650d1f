"""The committed OpenAPI document is the contract: it matches the app; docs name every route."""

from __future__ import annotations

import json
from pathlib import Path

from somnid.cli import render_openapi
from somnid.config import Settings

ROOT = Path(__file__).parents[2]


def test_committed_openapi_is_current(settings: Settings) -> None:
    committed = (ROOT / "openapi/openapi.json").read_text()
    assert committed == render_openapi(settings), (
        "openapi/openapi.json is stale: run `.venv/bin/somnid openapi --out openapi/openapi.json`"
    )


def test_operation_ids_are_stable_and_unique() -> None:
    document = json.loads((ROOT / "openapi/openapi.json").read_text())
    ids = [op["operationId"] for path in document["paths"].values() for op in path.values()]
    assert len(ids) == len(set(ids))
    assert all(op_id[0].islower() and "_" not in op_id for op_id in ids)


def test_every_route_is_documented() -> None:
    document = json.loads((ROOT / "openapi/openapi.json").read_text())
    api_doc = (ROOT / "docs/api.md").read_text()
    missing = [
        f"{method.upper()} {path}"
        for path, operations in document["paths"].items()
        for method in operations
        if f"`{method.upper()} {path}`" not in api_doc
    ]
    assert missing == []


def test_every_error_response_is_problem_json(settings: Settings) -> None:
    document = json.loads(render_openapi(settings))
    assert "ProblemDetails" in document["components"]["schemas"]
