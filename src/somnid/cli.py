"""The ``somnid`` command: ``serve`` runs the daemon; ``openapi`` writes the API contract."""

from __future__ import annotations

import argparse
import faulthandler
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from somnid import __version__
from somnid.config import ConfigFileError, Settings, load_settings
from somnid.errors import DataDirLocked

log = logging.getLogger("somnid")

EXIT_USAGE = 2
EXIT_LOCKED = 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="somnid", description="A memory daemon for LLM agents.")
    parser.add_argument("--version", action="version", version=f"somnid {__version__}")
    parser.add_argument("--config", type=Path, help="TOML config file (default: XDG config dir)")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="run the daemon")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--data-dir", type=Path)
    serve.add_argument(
        "--allow-non-loopback",
        action="store_const",
        const=True,
        help="permit binding an address other hosts can reach (the token still applies)",
    )

    openapi = commands.add_parser("openapi", help="print or write the OpenAPI document")
    openapi.add_argument("--out", type=Path, help="write here instead of stdout")

    model = commands.add_parser("model", help="the local embedding model")
    model_commands = model.add_subparsers(dest="model_command", required=True)
    install = model_commands.add_parser(
        "install", help="convert the bundled multilingual-e5-small into <data>/models (offline)"
    )
    install.add_argument("--data-dir", type=Path)
    install.add_argument("--fp32", action="store_true", help="keep full precision (slower)")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for key in ("host", "port", "data_dir", "allow_non_loopback"):
        value = getattr(args, key, None)
        if value is not None:
            overrides[key] = value
    return load_settings(args.config, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except (ConfigFileError, ValueError) as exc:
        print(f"somnid: bad configuration: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.command == "serve":
        return _serve(settings)
    if args.command == "openapi":
        return _openapi(settings, args.out)
    if args.command == "model":
        return _model_install(settings, fp32=args.fp32)
    return EXIT_USAGE


def _serve(settings: Settings) -> int:
    from somnid import logs
    from somnid.daemon import serve
    from somnid.errors import InvalidInput
    from somnid.security import check_bind

    try:
        check_bind(settings)
    except InvalidInput as exc:
        print(f"somnid: {exc.detail}", file=sys.stderr)
        return EXIT_USAGE
    logs.configure(settings.log_level)
    faulthandler.enable()  # a crash in native code still leaves a Python stack in the log
    try:
        return serve(settings)
    except DataDirLocked as exc:
        print(f"somnid: {exc.detail}", file=sys.stderr)
        return EXIT_LOCKED


def _model_install(settings: Settings, *, fp32: bool) -> int:
    from somnid.embed.base import EmbedError
    from somnid.embed.e5convert import install_default_model

    def progress(stage: str, fraction: float) -> None:
        width = 30
        filled = round(fraction * width)
        line = f"\r{stage:<16} [{'#' * filled}{'.' * (width - filled)}] {fraction:4.0%}"
        print(line, end="", file=sys.stderr, flush=True)

    try:
        path = install_default_model(settings.models_dir, quantize=not fp32, progress=progress)
    except EmbedError as exc:
        print(f"\nsomnid: {exc}", file=sys.stderr)
        return 1
    print(f"\nmodel ready in {path}", file=sys.stderr)
    return 0


def openapi_document(settings: Settings) -> dict[str, Any]:
    from somnid.api.app import create_app

    return create_app(settings).openapi()


def render_openapi(settings: Settings) -> str:
    return json.dumps(openapi_document(settings), indent=2, ensure_ascii=False) + "\n"


def _openapi(settings: Settings, out: Path | None) -> int:
    text = render_openapi(settings)
    if out is None:
        sys.stdout.write(text)
    else:
        out.write_text(text, encoding="utf-8")
    return 0
