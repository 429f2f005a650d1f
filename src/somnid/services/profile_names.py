"""Which profile a user id stands for, one way for the API, the prompt's names and the
dreams: its name is :func:`~somnid.memory.names.name_for` of the id; one kept under the
id's former name (its slug) stays the user's while its ``user_id`` says so; a profile that
exists under the name as given is that one."""

from __future__ import annotations

import contextlib

from somnid.errors import BrokenFile, InvalidName, NotFound
from somnid.memory.kinds import SELF_PROFILE, Kind
from somnid.memory.names import former_name_for, is_name, name_for
from somnid.store.memories import MemoryStore


def profile_name(user: str) -> str:
    """The name a profile for the user id ``user`` is created under. An id that only looks
    like the agent's own profile (`` about_me``, fullwidth letters) is refused."""
    name = name_for(user)
    if name == SELF_PROFILE and user != SELF_PROFILE:
        raise InvalidName(f"{user!r} would name the agent's own profile")
    return name


def existing_profile(store: MemoryStore, user: str) -> str | None:
    """The name of the profile that exists for ``user`` (a name or a user id), if any.
    Blocking: a few stats, and a read of a profile under the former name."""
    if is_name(user) and store.exists(Kind.PROFILE, user):
        return user
    named = profile_name(user)
    if store.exists(Kind.PROFILE, named):
        return named
    former = former_name_for(user)
    if former is not None:
        with contextlib.suppress(NotFound, BrokenFile, InvalidName):
            kept = store.read(Kind.PROFILE, former)
            if str(kept.meta.get("user_id", "")).strip() == user.strip():
                return former
    return None


def profile_asked(store: MemoryStore, user: str) -> str:
    """The profile ``user`` asks for: the one that exists for it, else the name it would be
    created under (a read of that is a 404). Blocking."""
    return existing_profile(store, user) or profile_name(user)
