"""``somnid openapi``: the API contract, generated from the app."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from somnid.config import Settings


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    openapi = commands.add_parser("openapi", help="print or write the OpenAPI document")
    openapi.add_argument("--out", type=Path, help="write here instead of stdout")
    openapi.set_defaults(run=run)


def openapi_document(settings: Settings) -> dict[str, Any]:
    from somnid.api.app import create_app

    return create_app(settings).openapi()


def render_openapi(settings: Settings) -> str:
    return json.dumps(openapi_document(settings), indent=2, ensure_ascii=False) + "\n"


def run(args: argparse.Namespace, settings: Settings) -> int:
    text = render_openapi(settings)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
    return 0
