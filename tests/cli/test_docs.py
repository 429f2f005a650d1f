"""The docs name every command the parser has."""

from __future__ import annotations

import argparse
from pathlib import Path

from somnid.cli import _parser

ROOT = Path(__file__).parents[2]


def commands(parser: argparse.ArgumentParser, prefix: str = "somnid") -> list[str]:
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = commands(sub, f"{prefix} {name}")
                found.extend(nested or [f"{prefix} {name}"])
    return found


def test_every_command_is_in_the_operations_doc() -> None:
    doc = (ROOT / "docs/operations.md").read_text()
    names = commands(_parser())
    assert len(names) == 17
    assert [name for name in names if f"`{name}" not in doc] == []
