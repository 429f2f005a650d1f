"""Who writes: the actor of a write, and what a finished dream hands to the history.

A leaf module (it imports nothing of somnid's): the edges set the actor (the API per
request, the tool registry per tool call, the dreamer for its own task), and the history
reads it; neither knows the other. A ``ContextVar``, so it follows the task that set it and
the threads it starts with ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Actor:
    """``source`` is one of api, ui, tool, dream, hand, somnid; ``name`` the route or
    tool."""

    source: str
    name: str
    agent: str | None = None
    session: str | None = None


DREAM = Actor("dream", "dream")
"""The dream's own writes: the dreamer acts as this for the whole of its task."""

MERGED = Actor("sync", "merged")
"""Files a sync's merge put in place, told to the listeners (the index): its commit holds
them already, so history notes none of them."""

_current: ContextVar[Actor | None] = ContextVar("somnid_actor", default=None)


def current_actor() -> Actor | None:
    return _current.get()


@contextlib.contextmanager
def acting(actor: Actor) -> Iterator[None]:
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def for_anyone() -> Iterator[None]:
    """The current actor without its agent and session, for upkeep a read does (a use
    noted): many sessions' reads are one writer's, one commit a window, not one each (a
    probe: MCP clients, a session each, made hundreds of commits a minute; history fell
    minutes behind, and purges and shutdown waited for it)."""
    actor = _current.get()
    if actor is None or (actor.agent is None and actor.session is None):
        yield
        return
    with acting(Actor(actor.source, actor.name)):
        yield


@dataclass(frozen=True, slots=True)
class DreamRecord:
    """What the history needs of a finished dream for its one commit."""

    trigger: str
    status: str
    reason: str
    created: int = 0
    updated: int = 0
    archived: int = 0
    decayed: int = 0
    retired: int = 0
    profiles: int = 0
    """Profiles changed (identity), and profile lines the identity gate refused."""
    profiles_refused: int = 0
    processed: tuple[str, ...] = field(default_factory=tuple)
    journal: str | None = None
    """The journal's path relative to the data dir, if one was written."""
