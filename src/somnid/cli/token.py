"""``somnid token``: print the bearer token every route but health wants.

The token is the configured one (``token``, ``SOMNID_TOKEN``) or ``<data>/token``. With the
daemon stopped, a missing token file is created (0600) under the data-dir lock, exactly as
the daemon would on its first start, and ``--rotate`` replaces it. A running daemon keeps the
token it started with, so rotating needs it stopped.
"""

from __future__ import annotations

import argparse
import sys

from somnid.cli._common import EXIT_LOCKED, CliError
from somnid.config import Settings
from somnid.errors import DataDirLocked
from somnid.security import (
    load_or_create_token,
    read_token_file,
    token_path,
    write_new_token,
)
from somnid.store.lock import DataDirLock


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    token = commands.add_parser(
        "token", parents=[common], help="print the bearer token (creates it if there is none)"
    )
    token.add_argument(
        "--rotate",
        action="store_true",
        help="replace the token file with a new token (daemon stopped)",
    )
    token.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if settings.token is not None:
        if args.rotate:
            raise CliError(
                "the token is set in the configuration (token / SOMNID_TOKEN): change it there"
            )
        print(load_or_create_token(settings))
        return 0
    path = token_path(settings.data_dir)
    if not args.rotate:
        existing = read_token_file(path)
        if existing is not None:
            print(existing)
            return 0
    lock = DataDirLock(settings.data_dir)
    try:
        lock.acquire()
    except DataDirLocked:
        pid = lock.holder_pid()
        who = f"somnid (pid {pid})" if pid else "a somnid"
        if args.rotate:
            raise CliError(
                f"{who} is running on {settings.data_dir} and keeps the token it started with: "
                "stop it, rotate, start it again (`systemctl --user stop somnid; somnid token "
                "--rotate; systemctl --user start somnid`)",
                EXIT_LOCKED,
            ) from None
        raise CliError(
            f"{who} is running on {settings.data_dir} but {path} is missing: restart it to "
            "write a new one",
            EXIT_LOCKED,
        ) from None
    try:
        if args.rotate:
            write_new_token(path)
            print(f"somnid: wrote a new token to {path}", file=sys.stderr)
        token = load_or_create_token(settings)
    finally:
        lock.release()
    print(token)
    return 0
