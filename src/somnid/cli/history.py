"""``somnid history``, ``somnid revert`` and ``somnid purge``, through the running daemon."""

from __future__ import annotations

import argparse
import json
import sys
from urllib.parse import quote

from somnid.cli._client import DaemonClient
from somnid.cli._common import EXIT_USAGE, CliError
from somnid.config import Settings


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    log = commands.add_parser("history", parents=[common], help="what changed in memory, by whom")
    log.add_argument("--dreams", action="store_true", help="only the dreams")
    log.add_argument("--limit", type=int, default=20)
    log.add_argument("--json", action="store_true")
    log.set_defaults(run=show_history)
    undo = commands.add_parser("revert", parents=[common], help="undo a commit or a dream")
    undo.add_argument("commit", nargs="?", help="a commit id from `somnid history`")
    undo.add_argument("--dream", help="a dream id (the journal's dream_id) instead")
    undo.set_defaults(run=revert)
    purge = commands.add_parser("purge", parents=[common], help="delete an entry for good")
    purge.add_argument("kind")
    purge.add_argument("name")
    purge.add_argument("--confirm", help="the entry's name again (asked for when left out)")
    purge.add_argument("--history", action="store_true", help="remove its past versions too")
    purge.set_defaults(run=run_purge)


def show_history(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings) as client:
        page = client.get("/v1/history", limit=args.limit, dreams=str(args.dreams).lower())
    if args.json:
        print(json.dumps(page, ensure_ascii=False))
        return 0
    for commit in page["items"]:
        print(f"{commit['id'][:12]}  {commit['date']}  {commit['author']}: {commit['subject']}")
    return 0


def revert(args: argparse.Namespace, settings: Settings) -> int:
    if bool(args.commit) == bool(args.dream):
        print("name a commit or --dream ID")
        return 2
    path = (
        f"/v1/dreams/{quote(args.dream, safe='')}/revert"
        if args.dream
        else f"/v1/history/{quote(args.commit, safe='')}/revert"
    )
    with DaemonClient(settings) as client:
        done = client.post(path)
    paths = ", ".join(done["paths"])
    print(f"reverted {done['reverted'][:12]} in {str(done['commit'])[:12]}: {paths}")
    reopened = done.get("reopenedLogs") or []
    if reopened:
        print(f"pending again (the next dream reads them anew): {', '.join(reopened)}")
    return 0


def run_purge(args: argparse.Namespace, settings: Settings) -> int:
    confirm = args.confirm
    if confirm is None:
        if not sys.stdin.isatty():
            raise CliError(
                f"purging deletes {args.name!r} for good; without a terminal to ask on, "
                f"repeat its name: --confirm {args.name!r}",
                EXIT_USAGE,
            )
        try:
            confirm = input(f"type the name {args.name!r} to delete it for good: ").strip()
        except EOFError:
            raise CliError("nothing was typed: nothing purged", EXIT_USAGE) from None
    query = f"confirm={quote(confirm, safe='')}&history={str(args.history).lower()}"
    path = f"/v1/memories/{quote(args.kind, safe='')}/{quote(args.name, safe='')}/purge?{query}"
    with DaemonClient(settings) as client:
        done = client.post(path)
    where = " and from history" if done["history"] else ""
    print(f"purged {done['kind']} {done['name']}{where}: {', '.join(done['removed']) or '-'}")
    return 0
