"""``somnid serve``: run the daemon in the foreground (systemd runs exactly this)."""

from __future__ import annotations

import argparse
import faulthandler
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from somnid.cli._common import EXIT_LOCKED, EXIT_USAGE, CliError
from somnid.config import Settings
from somnid.config_checks import original_variables

if TYPE_CHECKING:
    from somnid.store.layout import Layout


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
    from somnid.embed.loading import load_early
    from somnid.errors import DataDirLocked, InvalidInput
    from somnid.security import check_bind
    from somnid.store.layout import Layout

    try:
        check_bind(settings)
    except InvalidInput as exc:
        raise CliError(exc.detail, EXIT_USAGE) from None
    logs.configure(settings.log_level, settings.log_format)
    if (unread := original_variables()) is not None:
        logging.getLogger("somnid.config").warning("%s", unread)
    faulthandler.enable()  # a crash in native code still leaves a Python stack in the log
    from somnid.recall.offline import index_file_problem

    problem = data_dir_problem(settings.data_dir) or layout_problem(Layout(settings.data_dir))
    problem = problem or index_file_problem(settings)
    if problem is not None:
        raise CliError(problem, EXIT_USAGE)
    # The model loads while the daemon's modules are imported (~0.5 s off every start).
    model_load = load_early(settings.embed, Layout(settings.data_dir).models_dir)
    from somnid.server.daemon import serve

    try:
        return serve(settings, model_load)
    except DataDirLocked as exc:
        raise CliError(exc.detail, EXIT_LOCKED) from None
    except OSError as exc:  # the data dir went read-only or away while starting
        raise CliError(f"cannot use the data dir {settings.data_dir}: {_why(exc)}") from None


def data_dir_problem(data_dir: Path) -> str | None:
    """Why ``data_dir`` cannot hold somnid's data, in one line; None when it can."""
    for parent in (data_dir, *data_dir.parents):
        if parent.exists():
            break
    if parent.exists() and not parent.is_dir():
        where = "the data dir" if parent == data_dir else f"{parent} (above the data dir)"
        return (
            f"{where} is a file, not a folder: point --data-dir (or SOMNID_DATA_DIR) at a "
            f"folder, or move the file away"
        )
    probe = parent / f".somnid-write-check-{os.getpid()}"
    try:
        probe.mkdir(mode=0o700)
        probe.rmdir()
    except OSError as exc:
        return (
            f"cannot write to {parent}: {_why(exc)}; somnid writes its data there: point "
            "--data-dir (or SOMNID_DATA_DIR) at a folder this user can write"
        )
    return None


def _in_history(root: Path, top: str) -> bool:
    """Whether the data dir's history holds files under ``top`` (False without git)."""
    from somnid.errors import SomnidError
    from somnid.history.git import Git
    from somnid.history.staging import in_history

    if not (root / ".git").is_dir():
        return False
    try:
        return in_history(Git(root), top)
    except SomnidError:
        return False


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def layout_problem(layout: Layout) -> str | None:
    """Why somnid cannot start over what a person left in the data dir (a file where it
    keeps a folder, a token file that is not one line of text), in one line; else None."""
    from somnid.security import token_path

    for folder in (layout.memory_dir, layout.skills_dir, layout.index_dir, layout.models_dir):
        if folder.exists() and not folder.is_dir():
            return f"{folder} is a file where somnid keeps a folder: move it away"
    for top in layout.kept():
        rel = str(layout.relative(top))
        if not os.path.lexists(top) and _in_history(layout.root, rel):
            # Made anew, its entries would be committed as deleted, and sync would carry
            # that to every machine.
            return (
                f"{top} is missing, and history holds its files: put it back, or bring it "
                f"back from history (git -C {layout.root} checkout HEAD -- {rel}); to "
                "start afresh, make the folder again, empty"
            )
    token = token_path(layout.root)
    if token.exists() or token.is_symlink():
        if token.is_symlink() or not token.is_file():
            return f"{token} is not a file: move it away (somnid makes a new token)"
        try:
            token.read_text(encoding="utf-8")
        except OSError as exc:
            return f"cannot read the token file {token}: {_why(exc)}; fix it or move it away"
        except UnicodeDecodeError:
            return f"the token file {token} is not text: fix it or move it away"
    return None
