"""Who is writing: a small context the edges set and the history committer reads.

The API sets it per request, the tool registry per tool call; a write with none during a
dream is the dream's, otherwise somnid's own (maintenance). A ``ContextVar``, so it follows
the request's task and the threads it starts with ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Actor:
    """``source`` is one of api, tool, dream, hand, somnid; ``name`` the route or tool."""

    source: str
    name: str
    agent: str | None = None
    session: str | None = None


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
