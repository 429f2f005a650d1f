"""``somnid sleep run|cancel|status``: dreams, through the running daemon."""

from __future__ import annotations

import argparse
import json
from typing import Any

from somnid.cli._client import DaemonClient
from somnid.cli._common import fields
from somnid.cli.status import sleep_rows
from somnid.config import Settings


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    sleep = commands.add_parser("sleep", help="dreams: run one now, cancel it, see the state")
    actions = sleep.add_subparsers(dest="sleep_command", required=True)
    run_ = actions.add_parser("run", parents=[common], help="start a dream now")
    run_.add_argument("--wait", action="store_true", help="wait for it and show the result")
    run_.add_argument("--json", action="store_true")
    run_.set_defaults(run=run_sleep)
    cancel = actions.add_parser("cancel", parents=[common], help="interrupt the running dream")
    cancel.add_argument("--json", action="store_true")
    cancel.set_defaults(run=cancel_sleep)
    status = actions.add_parser("status", parents=[common], help="is it sleeping, what waits")
    status.add_argument("--json", action="store_true")
    status.set_defaults(run=sleep_status)


def run_sleep(args: argparse.Namespace, settings: Settings) -> int:
    # A dream with an LLM takes minutes: waiting for it has no deadline (Ctrl-C stops waiting).
    with DaemonClient(settings, timeout=None if args.wait else 30.0) as client:
        answer = client.post("/v1/sleep/run", {"trigger": "cli", "wait": args.wait})
    result = answer.get("result")
    if args.json:
        print(json.dumps(answer, ensure_ascii=False))
    elif not answer["started"]:
        print("a dream is already running (`somnid sleep status`, `somnid sleep cancel`)")
    elif result is None:
        print("dream started (`somnid sleep status` to follow it)")
    if result is not None and not args.json:
        print(render_result(result))
    # A dream that failed or was cut short is a failure for a script that waited for it.
    return 1 if result is not None and result.get("status") in FAILED else 0


FAILED = ("error", "interrupted")


def cancel_sleep(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings, timeout=60.0) as client:
        answer = client.post("/v1/sleep/cancel")
    if args.json:
        print(json.dumps(answer))
    else:
        print("the dream was interrupted" if answer["cancelled"] else "no dream was running")
    return 0


def sleep_status(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings) as client:
        answer = client.get("/v1/sleep/status")
    if args.json:
        print(json.dumps(answer, ensure_ascii=False))
    else:
        print(fields(sleep_rows(answer), indent=""))
    return 0


def render_result(result: dict[str, Any]) -> str:
    rows: list[tuple[str, object]] = [
        ("status", f"{result['status']} ({result['reason']})"),
        ("logs", f"{len(result['processed'])} of {len(result['logs'])} processed"),
        (
            "memories",
            f"{result['created']} created, {result['updated']} updated, "
            f"{result['archived']} archived, {result['decayed']} decayed, "
            f"{result['retired']} retired",
        ),
    ]
    if result["skippedLogs"]:
        rows.append(("never dreamed", f"{len(result['skippedLogs'])} logs archived unread"))
    if result["journal"]:
        rows.append(("journal", result["journal"]))
    if result["summary"]:
        rows.append(("summary", result["summary"]))
    return fields(rows, indent="")
