"""A store alone, as the daemon's start leaves its data dir (memory/ and skills/ made)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient

from somnid.memory.clock import Clock
from somnid.store.layout import Layout
from somnid.store.memories import MemoryStore


def made_layout(root: Path) -> Layout:
    """The layout of ``root``, its two top folders made as a start makes them: a write
    never makes them (a missing one was moved away by a person)."""
    layout = Layout(root)
    for folder in layout.tops():
        folder.mkdir(parents=True, exist_ok=True)
    return layout


def open_store(layout: Layout | Path, clock: Clock) -> MemoryStore:
    """A store on ``layout`` (or a root path), its top folders made (:func:`made_layout`)."""
    made = made_layout(layout if isinstance(layout, Path) else layout.root)
    return MemoryStore(made if isinstance(layout, Path) else layout, clock)


def written_by_hand(knowledge: Path, client: TestClient) -> Callable[[], bool]:
    """A knowledge entry ``by-hand`` (its body "okapi") written into ``knowledge`` as a
    person would; the check that recall finds it (the file watcher saw it)."""
    hand = knowledge / "by-hand"
    hand.mkdir()
    (hand / "SKILL.md").write_text("---\ndescription: typed by hand\n---\nokapi\n")

    def found() -> bool:
        answer = client.post("/v1/recall", json={"query": "okapi"})
        return any(item["name"] == "by-hand" for item in answer.json()["items"])

    return found
