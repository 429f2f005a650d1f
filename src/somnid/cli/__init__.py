"""The ``somnid`` command. Each subcommand is a module here with ``add_parser`` and ``run``:

serve, status, recall, sleep run|cancel|status, history, revert, purge, sync,
merge-driver, reindex, doctor, openapi, model install, token, install-service.

Commands that need the daemon talk to it over HTTP (``_client``); ``reindex`` and ``token``
work on the data dir themselves when no daemon runs. Exit statuses are in ``_common``:
0 done, 1 failed, 2 bad usage or configuration, 3 data dir held by another somnid,
4 no daemon answers.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from somnid import __version__
from somnid.cli import (
    doctor,
    history,
    model,
    openapi,
    recall,
    reindex,
    serve,
    service,
    sleep,
    status,
    sync,
    token,
)
from somnid.cli._common import EXIT_FAILED, EXIT_USAGE, CliError, PlainOutput, plain
from somnid.cli.openapi import openapi_document, render_openapi
from somnid.config import ConfigFileError, Settings, load_settings
from somnid.errors import SomnidError
from somnid.server import daemon_file

__all__ = ["main", "openapi_document", "render_openapi"]

_COMMANDS = (
    serve, status, recall, sleep, history, sync, reindex, doctor, openapi, model, token, service,
)  # fmt: skip


def _folder(text: str) -> Path:
    """A folder named on the command line; an empty name would be the current folder."""
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: name a folder (or leave it out)")
    return Path(text)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="somnid", description="A memory daemon for LLM agents.")
    parser.add_argument("--version", action="version", version=f"somnid {__version__}")
    parser.add_argument("--config", type=Path, help="TOML config file (default: XDG config dir)")
    # Where the data and the daemon are: every command takes these, after its name.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", type=_folder, help="the data dir (default: XDG data dir)")
    common.add_argument("--host", help="the daemon's address (default 127.0.0.1)")
    common.add_argument("--port", type=int, help="the daemon's port (default 7373)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in _COMMANDS:
        module.add_parser(commands, common)
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {}
    for key in ("host", "port", "data_dir", "allow_non_loopback"):
        value = getattr(args, key, None)
        if value is not None:
            overrides[key] = value
    settings = load_settings(args.config, **overrides)
    if args.command in _SERVING or "port" in overrides or "SOMNID_PORT" in os.environ:
        return settings
    # A daemon of this data dir started with --port says where it listens: use that.
    running = daemon_file.read(settings.data_dir)
    if running is None or (running.host, running.port) == (settings.host, settings.port):
        return settings
    return load_settings(args.config, **{**overrides, "port": running.port, "host": running.host})


_SERVING = frozenset({"serve", "install-service"})
"""Commands that choose where to listen: they never take another daemon's address."""


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # an output that cannot hold a memory's text
        if isinstance(stream, io.TextIOWrapper):  # (PYTHONIOENCODING=latin-1) shows ? for
            with contextlib.suppress(ValueError):  # what it cannot, not a traceback
                stream.reconfigure(errors="replace")
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
    except (ConfigFileError, ValueError) as exc:
        if args.command == "doctor":
            return doctor.run_broken_config(args, exc)
        print(f"somnid: bad configuration: {exc}", file=sys.stderr)
        return EXIT_USAGE
    shown = sys.stdout
    if args.command not in _SERVING:  # the daemon's own output is its logs
        sys.stdout = PlainOutput(shown)
    try:
        code: int = args.run(args, settings)
    except CliError as exc:
        print(f"somnid: {plain(exc.message)}", file=sys.stderr)
        return exc.status
    except SomnidError as exc:
        print(f"somnid: {plain(exc.detail)}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `somnid recall --json x | head`: the reader has had enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAILED
    except OSError as exc:  # a path given that is no folder, a file that cannot be written
        where = f": {exc.filename}" if exc.filename else ""
        print(f"somnid: {exc.strerror or exc}{where}", file=sys.stderr)
        return EXIT_FAILED
    except UnicodeEncodeError as exc:
        if "surrogates" not in str(exc):
            raise
        # An argument of bytes the locale does not read: Python keeps them as surrogates.
        print("somnid: an argument is not valid text in this locale", file=sys.stderr)
        return EXIT_USAGE
    finally:
        sys.stdout = shown
    return code
