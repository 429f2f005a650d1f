"""``somnid recall QUERY``: search memory through the running daemon."""

from __future__ import annotations

import argparse
import json
from typing import Any

from somnid.cli._client import DaemonClient
from somnid.cli._common import between
from somnid.config import Settings
from somnid.memory.kinds import Kind


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    recall = commands.add_parser(
        "recall", parents=[common], help="search memory by meaning and keywords"
    )
    recall.add_argument("query", nargs="+", help="what to look for (words are joined)")
    recall.add_argument("--limit", type=between(1, 50), default=10, help="at most this many (1-50)")
    recall.add_argument(
        "--kind",
        action="append",
        choices=[kind.value for kind in Kind],
        help="search only this kind (repeatable; default knowledge, episode, skill)",
    )
    recall.add_argument("--project", help="this project's entries and those without one")
    recall.add_argument("--explain", action="store_true", help="show each score's parts")
    recall.add_argument("--json", action="store_true", help="the daemon's answer as JSON")
    recall.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    body: dict[str, Any] = {"query": " ".join(args.query), "limit": args.limit}
    if args.kind:
        body["kinds"] = args.kind
    if args.project is not None:  # an empty one is refused, as the API does: never "all"
        body["project"] = args.project
    if args.explain:
        body["explain"] = True
    with DaemonClient(settings) as client:
        answer = client.post("/v1/recall", body)
    if args.json:
        print(json.dumps(answer, ensure_ascii=False))
    else:
        print(render(answer))
    return 0


def render(answer: dict[str, Any]) -> str:
    items, said = answer["items"], answer.get("lines") or []
    if not items and not said:
        return f"nothing found for {answer['query']!r} ({answer['mode']})"
    lines = [f"{len(items)} found for {answer['query']!r} ({answer['mode']})"]
    for n, item in enumerate(items, start=1):
        lines.append(f"{n:>2}. [{item['kind']}] {item['name']}  {item['score']:.3f}")
        if item["description"]:
            lines.append(f"    {item['description']}")
        content = " ".join(item["content"].split())
        if content:
            lines.append(f"    {content[:200]}{'…' if len(content) > 200 else ''}")
        lines.append(f"    {item['source']}")
        if item.get("components"):
            parts = ", ".join(f"{k} {v:.3f}" for k, v in item["components"].items())
            lines.append(f"    ({parts})")
    if said:  # archived conversations' lines a dream left out, after the memories
        lines.append(f"{len(said)} lines of archived conversations:")
    for n, line in enumerate(said, start=1):
        who = line.get("speaker") or line["role"]
        when = f", {line['time']}" if line.get("time") else ""
        lines.append(f"{n:>2}. {who} ({line['log']}{when})  {line['score']:.3f}")
        text = " ".join(line["text"].split())
        lines.append(f"    {text[:200]}{'…' if len(text) > 200 else ''}")
    return "\n".join(lines)
