"""``somnid serve``: run the daemon in the foreground (systemd runs exactly this)."""

from __future__ import annotations

import argparse
import faulthandler

from somnid.cli._common import EXIT_LOCKED, EXIT_USAGE, CliError
from somnid.config import Settings


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    serve = commands.add_parser("serve", parents=[common], help="run the daemon")
    serve.add_argument(
        "--allow-non-loopback",
        action="store_const",
        const=True,
        help="permit binding an address other hosts can reach (the token still applies)",
    )
    serve.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from somnid import logs
    from somnid.daemon import serve
    from somnid.errors import DataDirLocked, InvalidInput
    from somnid.security import check_bind

    try:
        check_bind(settings)
    except InvalidInput as exc:
        raise CliError(exc.detail, EXIT_USAGE) from None
    logs.configure(settings.log_level, settings.log_format)
    faulthandler.enable()  # a crash in native code still leaves a Python stack in the log
    try:
        return serve(settings)
    except DataDirLocked as exc:
        raise CliError(exc.detail, EXIT_LOCKED) from None
