"""``somnid status``: the running daemon's health, index, sleep and sync, in one view."""

from __future__ import annotations

import argparse
import json
from typing import Any

from somnid.cli._client import DaemonClient, not_running
from somnid.cli._common import CliError, fields, size
from somnid.cli.sync import render as render_sync
from somnid.config import Settings


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    status = commands.add_parser(
        "status", parents=[common], help="health, index, sleep and sync of the running daemon"
    )
    status.add_argument("--json", action="store_true", help="one JSON object for machines")
    status.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings) as client:
        health = client.health()
        if health is None:
            raise not_running(settings)
        unavailable = ""
        try:
            index: dict[str, Any] | None = client.get("/v1/index/status")
        except CliError as exc:  # its server away: the rest of the view is wanted most then
            index, unavailable = None, exc.message
        sleep = client.get("/v1/sleep/status")
        sync = client.get("/v1/sync/status")
        health = client.get("/v1/health")  # with the token: its paths and broken files
    if args.json:
        print(
            json.dumps(
                {"url": client.url, "health": health, "index": index, "sleep": sleep, "sync": sync}
            )
        )
    else:
        print(render(client.url, health, index, sleep))
        if index is None:
            print(f"    {unavailable}")
        print("sync")
        print(render_sync(sync))
    return 0


def render(
    url: str, health: dict[str, Any], index: dict[str, Any] | None, sleep: dict[str, Any]
) -> str:
    broken = health["brokenFiles"]
    counts = " · ".join(f"{kind} {n}" for kind, n in health["counts"].items())
    lines = [
        f"somnid {health['version']}: {health['status']}",
        fields(
            [
                ("url", url),
                ("data dir", health["dataDir"]),
                ("memories", counts),
                ("vectors", component(health["vector"])),
                ("llm", component(health["llm"])),
                ("broken files", len(broken) if broken else "none"),
            ]
        ),
    ]
    lines += [f"    {item['path']}: {item['reason']}" for item in broken]
    lines.append("index")
    if index is None:
        lines.append(fields([("state", component(health["index"]))]))
    else:
        lines.append(fields(index_rows(index)))
    lines.append("sleep")
    lines.append(fields(sleep_rows(sleep)))
    return "\n".join(lines)


def component(value: dict[str, Any]) -> str:
    detail = value.get("detail")
    return f"{value['status']} ({detail})" if detail else str(value["status"])


def index_rows(index: dict[str, Any]) -> list[tuple[str, object]]:
    rows: list[tuple[str, object]] = [
        ("entries", index["entries"]),
        ("vectors", f"{index['vectors']} ({index['pending']} texts waiting)"),
        ("model", index["model"] or "-"),
        (
            "embedder",
            index["embedState"] + (f": {index['embedError']}" if index["embedError"] else ""),
        ),
        ("sync", f"{index['syncState']}, last {index['lastSync'] or 'never'}"),
        ("size", size(index["sizeBytes"])),
    ]
    rebuild = index.get("rebuild")
    if rebuild:
        files = rebuild["files"] if rebuild["files"] is not None else "?"
        rows.append(("rebuild", f"{rebuild['state']}: {rebuild['done']}/{files} files"))
    return rows


def sleep_rows(sleep: dict[str, Any]) -> list[tuple[str, object]]:
    sleeping = f"yes ({sleep['trigger']}, since {sleep['since']})" if sleep["sleeping"] else "no"
    rows: list[tuple[str, object]] = [
        ("sleeping", sleeping),
        ("pending logs", sleep["pendingLogs"]),
        ("llm", component(sleep["llm"])),
    ]
    passed = [
        ("passed by", f"{stem}: {why}") for stem, why in (sleep.get("passedBy") or {}).items()
    ]
    rows[2:2] = passed  # waiting for a person, oldest first
    last = sleep.get("lastDream")
    if last:
        rows.append(
            (
                "last dream",
                f"{last['status']} at {last['finished'] or last['started']}: "
                f"{last['summary'] or last['reason']}",
            )
        )
    rows.append(("next", sleep["nextEligible"] or "-"))
    rows.append(("eligibility", sleep["eligibility"]))
    return rows
