"""Which paths lie under a list of paths, decided here when the list is too long for a
command line: a first start over 100k files made git's argument list too long (E2BIG)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath

ON_COMMAND_LINE = 256  # more paths than this are matched here, not passed to git


def within(paths: Iterable[str], specs: Iterable[str]) -> list[str]:
    """The ``paths`` that are one of ``specs`` or lie in a folder that is (plain relative
    paths, no pathspec magic)."""
    wanted = set(specs)
    return [
        path
        for path in paths
        if path in wanted or any(str(parent) in wanted for parent in PurePosixPath(path).parents)
    ]


def with_folders(paths: Iterable[str]) -> set[str]:
    """The paths and every folder above them."""
    found: set[str] = set()
    for path in paths:
        found.add(path)
        found.update(str(parent) for parent in PurePosixPath(path).parents)
    return found


def as_tops(
    specs: list[str], changed: Iterable[str], tops: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Many ``specs`` as the ``tops`` they lie under, with the ``changed`` paths they do
    not cover, to exclude: git matches every path against every pathspec, and 100k of them
    kept a first ``git add`` busy for minutes."""
    chosen = set(within(changed := list(changed), specs))
    return list(tops), [path for path in changed if path not in chosen]
