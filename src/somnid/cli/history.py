"""``somnid history``, ``somnid revert`` and ``somnid purge``, through the running daemon."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
from typing import Any
from urllib.parse import quote

import httpx

from somnid.cli._client import DaemonClient
from somnid.cli._common import EXIT_USAGE, CliError, between
from somnid.config import Settings

POLL_S = 1.0


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    log = commands.add_parser("history", parents=[common], help="what changed in memory, by whom")
    log.add_argument("--dreams", action="store_true", help="only the dreams")
    log.add_argument("--limit", type=between(1, 200), default=20, help="at most this many (1-200)")
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
    purge.add_argument(
        "--scrub-logs",
        action="store_true",
        help="also replace its text by [REDACTED] in the session logs, live and archived",
    )
    purge.add_argument(
        "--phrase",
        action="append",
        default=[],
        help="more text to scrub from the logs (with --scrub-logs; again for more)",
    )
    purge.set_defaults(run=run_purge)


def show_history(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings) as client:
        page = client.get("/v1/history", limit=args.limit, dreams=str(args.dreams).lower())
    if args.json:
        print(json.dumps(page, ensure_ascii=False))
        return 0
    for commit in page["items"]:
        print(commit_line(commit))
    return 0


def commit_line(commit: dict[str, Any]) -> str:
    """A commit on one line, its author named once (a route's commit begins with it)."""
    author, subject = commit["author"], commit["subject"]
    begins = subject.startswith(author) and subject[len(author) : len(author) + 1] in (":", ",")
    said = subject if begins else f"{author}: {subject}"
    return f"{commit['id'][:12]}  {commit['date']}  {said}"


def revert(args: argparse.Namespace, settings: Settings) -> int:
    if bool(args.commit) == bool(args.dream):
        raise CliError("name a commit or --dream ID", EXIT_USAGE)
    path = (
        f"/v1/dreams/{quote(args.dream, safe='')}/revert"
        if args.dream
        else f"/v1/history/{quote(args.commit, safe='')}/revert"
    )
    with DaemonClient(settings) as client:
        done = client.post(path)
    paths = ", ".join(done["paths"])
    if done["commit"] is None and not done["paths"]:  # a dream that changed no memory
        print(f"reverted {done['reverted'][:12]}: it changed no memory; nothing to commit")
    elif done["commit"] is None:  # its files were back as they were already
        print(f"reverted {done['reverted'][:12]}: {paths} already as before it; no commit")
    else:
        print(f"reverted {done['reverted'][:12]} in {done['commit'][:12]}: {paths}")
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
    body = {"scrubLogs": args.scrub_logs, "phrases": args.phrase}
    stop = threading.Event()
    if args.history:  # a long history takes minutes: say how long, once the daemon knows
        threading.Thread(target=_say_estimate, args=(settings, stop), daemon=True).start()
    try:
        with DaemonClient(settings, timeout=None) as client:  # as long as the purge takes
            done = client.post(path, body)
    finally:
        stop.set()
    where = " and from history" if done["history"] else ""
    print(f"purged {done['kind']} {done['name']}{where}: {', '.join(done['removed']) or '-'}")
    if done["history"]:
        dropped = done.get("droppedCommits") or 0
        gone = f", dropped {dropped} that changed only the entry" if dropped else ""
        print(f"rewrote {done['rewrittenCommits']} commits{gone} in {done['seconds']:.1f} s")
    for log in done.get("scrubbedLogs") or []:
        print(f"scrubbed {log['replaced']}x from {log['path']}")
    return 0


def _say_estimate(settings: Settings, stop: threading.Event) -> None:
    with contextlib.suppress(CliError, httpx.HTTPError), DaemonClient(settings) as client:
        while not stop.wait(POLL_S):
            status = client.get("/v1/history/purge")
            if status["running"] and status["phase"] == "rewriting":
                seconds = status["estimatedSeconds"] or 0
                print(f"rewriting {status['commits']} commits of history, about {seconds:.0f} s")
                return
