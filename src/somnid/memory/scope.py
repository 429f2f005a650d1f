"""Whose an entry is: a project's, or no project's (then every project's)."""

from __future__ import annotations


def in_scope(value: object, project: str | None) -> bool:
    """Whether an entry whose ``project`` field is ``value`` is in ``project``'s scope: its
    own, or of no project. A number written by hand (``project: 42``) is the text ``42``,
    as the index reads it (the lists compared the number and hid it)."""
    return project is None or value in (None, "") or str(value) == project
