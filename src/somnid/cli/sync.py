"""``somnid sync`` (a round now, through the daemon), ``somnid sync --status``, and
``somnid merge-driver`` (what git runs to merge an entry file; see somnid.sync.merge)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from somnid.cli._client import DaemonClient
from somnid.cli._common import fields
from somnid.config import Settings
from somnid.sync import merge


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    sync = commands.add_parser(
        "sync", parents=[common], help="fetch, merge and push memory through sync.remote now"
    )
    sync.add_argument("--status", action="store_true", help="only show the sync's state")
    sync.add_argument("--json", action="store_true", help="one JSON object for machines")
    sync.set_defaults(run=run)
    driver = commands.add_parser(
        "merge-driver", help="merge one entry file three ways (git runs this; see the docs)"
    )
    driver.add_argument("paths", nargs="+", metavar="BASE OURS THEIRS [PATH]")
    driver.set_defaults(run=run_driver)


def run(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings, timeout=max(30.0, settings.sync.timeout_s * 4)) as client:
        status = client.get("/v1/sync/status") if args.status else client.post("/v1/sync")
    if args.json:
        print(json.dumps(status, ensure_ascii=False))
    else:
        print(render(status))
    return 0


def run_driver(args: argparse.Namespace, settings: Settings) -> int:
    return merge.main(args.paths)


def render(status: dict[str, Any]) -> str:
    """The sync's state as rows, then each conflict (``somnid sync`` and ``somnid status``)."""
    lines = [fields(rows(status))]
    lines += [f"    {c['path']} (beside {c['entry']})" for c in status["conflicts"]]
    return "\n".join(lines)


def rows(status: dict[str, Any]) -> list[tuple[str, object]]:
    """The sync's state as rows."""
    if not status["enabled"]:
        return [("sync", f"off ({status['detail']})")]
    state = status["state"] + (f": {status['lastError']}" if status["lastError"] else "")
    return [
        ("remote", status["remote"]),
        ("state", state),
        ("machine", status["machine"]),
        ("ahead/behind", f"{status['ahead']} / {status['behind']}"),
        ("last pull", status["lastPull"] or "never"),
        ("last push", status["lastPush"] or "never"),
        ("conflicts", len(status["conflicts"]) or "none"),
    ]
