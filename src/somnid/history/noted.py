"""What history has noted and not yet committed: each write with who made it, and how a
batch of them becomes as few commits as keeps every file's commits in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from somnid.provenance import Actor


@dataclass(slots=True)
class Noted:
    actor: Actor
    paths: dict[str, None] = field(default_factory=dict)
    dream: dict[str, Any] | None = None  # the dream's result, for its commit message
    names: list[str] = field(default_factory=list)
    """The routes or tools of the writes merged into this one (its actor's first)."""

    def __post_init__(self) -> None:
        if not self.names:
            self.names = [self.actor.name]


def merged(items: list[Noted]) -> list[Noted]:
    """``items`` with the writes of one writer (source, agent, session) as one: concurrent
    requests (PATCH a, PATCH b, …) were a commit each, and history fell minutes behind.
    A write joins an earlier one of its writer only when no write between them touched its
    files (each file's commits keep their order); a dream's commit stays its own."""
    out: list[Noted] = []
    for item in items:
        target = None
        if item.dream is None:
            for index in range(len(out) - 1, -1, -1):
                other = out[index]
                if other.dream is None and _writer(other.actor) == _writer(item.actor):
                    target = other
                    break
                if not other.paths.keys().isdisjoint(item.paths):
                    break  # a write between touched its files: it keeps its own commit
        if target is None:
            out.append(Noted(item.actor, dict(item.paths), item.dream, list(item.names)))
            continue
        target.paths.update(item.paths)
        target.names.extend(n for n in item.names if n not in target.names)
    return out


def _writer(actor: Actor) -> tuple[str, str | None, str | None]:
    return actor.source, actor.agent, actor.session
