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
    A write joins its writer's latest commit only when no later one touched its files (each
    file's commits keep their order); a dream's commit stays its own. Linear in the writes
    and their files."""
    out: list[Noted] = []
    latest: dict[tuple[str, str | None, str | None], int] = {}  # a writer's latest in out
    touched: dict[str, int] = {}  # a file's latest commit in out
    named: list[set[str]] = []
    for item in items:
        writer = _writer(item.actor)
        index = latest.get(writer) if item.dream is None else None
        if index is not None and max((touched.get(p, -1) for p in item.paths), default=-1) > index:
            index = None  # a write between touched its files: it keeps its own commit
        if index is None:
            index = len(out)
            fresh = Noted(item.actor, {}, item.dream)
            fresh.names = []  # filled below, the first write's name first
            out.append(fresh)
            named.append(set())
            if item.dream is None:
                latest[writer] = index
        target = out[index]
        target.paths.update(item.paths)
        for name in item.names:
            if name not in named[index]:
                named[index].add(name)
                target.names.append(name)
        for path in item.paths:
            touched[path] = index
    return out


def _writer(actor: Actor) -> tuple[str, str | None, str | None]:
    return actor.source, actor.agent, actor.session


def earliest(*times: float | None) -> float | None:
    """The earliest of ``times`` that is a time; None when none is."""
    return min((t for t in times if t is not None), default=None)
