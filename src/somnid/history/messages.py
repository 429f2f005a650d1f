"""What history writes in its commits: a dream's message, a listing of what changed, a
header's value."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from somnid.memory.text import one_line
from somnid.provenance import Actor
from somnid.store.layout import Layout


def dream_message(info: dict[str, Any], profiles: list[str] | None = None) -> str:
    """A dream's commit message; ``profiles``: the profiles its commit changes (counted
    and named: an identity change is never left unsaid)."""
    changed = len(profiles) if profiles is not None else info.get("profiles") or 0
    counts = (
        f"{info.get('created') or 0} created, {info.get('updated') or 0} updated, "
        f"{info.get('archived') or 0} archived, {info.get('decayed') or 0} decayed, "
        f"{info.get('retired') or 0} retired"
    )
    if changed or info.get("profiles_refused"):  # identity: never left unsaid
        counts += (
            f", {changed} profiles changed, "
            f"{info.get('profiles_refused') or 0} profile lines refused"
        )
    lines = [f"Dream ({info.get('trigger') or 'dream'}, {info.get('status')}): {counts}", ""]
    if profiles:
        lines.append("Profiles changed: " + ", ".join(profiles))
    if info.get("reason"):
        lines.append(f"Reason: {info['reason']}")
    if info.get("processed"):
        lines.append("Logs: " + ", ".join(info["processed"]))
    if info.get("dream_id"):
        lines += ["", f"Dream-Id: {info['dream_id']}"]
    return "\n".join(lines)


def listing(labels: list[str], shown: int = 5) -> str:
    head = ", ".join(labels[:shown])
    return head + (f" and {len(labels) - shown} more" if len(labels) > shown else "")


def header_value(value: str) -> str:
    """A git header's value: one line, no angle brackets (they end a name), 200 at most."""
    return one_line(value.replace("<", "").replace(">", ""))[:200] or "?"


def commit_message(message: str, actor: Actor) -> tuple[str, dict[str, str]]:
    """A commit's text with somnid's trailers (who wrote it, through which agent and
    session), and the environment that names its author."""
    trailers = [f"Somnid-Source: {actor.source}"]
    if actor.agent:
        trailers.append(f"Somnid-Agent: {header_value(actor.agent)}")
    if actor.session:
        trailers.append(f"Somnid-Session: {header_value(actor.session)}")
    body = message.rstrip("\n")
    text = body + ("\n" if "\n\n" in body else "\n\n") + "\n".join(trailers) + "\n"
    env = {
        "GIT_AUTHOR_NAME": header_value(actor.name),
        "GIT_AUTHOR_EMAIL": f"{actor.source}@somnid",
    }
    return text, env


def labels(layout: Layout, paths: Iterable[str]) -> list[str]:
    """``knowledge/foo``, ``episode/bar (archived)``, or the path for other files."""
    out: dict[str, None] = {}
    for rel in paths:
        what = layout.classify(layout.root / Path(rel))
        if what is None:
            out[rel] = None
        else:
            kind, name, archived = what
            out[f"{kind.value}/{name}{' (archived)' if archived else ''}"] = None
    return list(out)
