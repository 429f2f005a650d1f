"""A symbolic link to a folder under ``memory/``: the OS watch of a tree followed it, so a
link to ``/usr`` made 15k inotify watches outside the data dir (a probe; the per-user limit
is 8k on some systems, and the watcher then stopped for every hand edit). The link is left
out of the watch (somnid reads no entry through a link and reports it), its parent watched
alone, and hand edits beside it are still seen."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.recall.watch_plan import watch_plan
from tests.clients import app_client
from tests.stores import written_by_hand

HANG_S = 120.0  # a cap that only catches a hang
OUTSIDE_FOLDERS = 300


def _until(what: str, check: Any) -> None:
    deadline = time.monotonic() + HANG_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _inotify_watches() -> int:
    """The inotify watches this process holds now (each shows as a ``wd:`` line)."""
    count = 0
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            text = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue  # closed meanwhile
        count += sum(1 for line in text.splitlines() if line.startswith("inotify wd:"))
    return count


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    for number in range(OUTSIDE_FOLDERS):
        (outside / f"f{number // 20}" / f"g{number}").mkdir(parents=True)
    return outside


def test_the_plan_leaves_a_linked_folder_out(tmp_path: Path) -> None:
    root = tmp_path / "memory"
    (root / "knowledge" / "real").mkdir(parents=True)
    (root / "skills").mkdir()
    (root / "knowledge" / "linked").symlink_to(_outside(tmp_path), target_is_directory=True)
    plan = watch_plan([root])
    assert plan.linked == [root / "knowledge" / "linked"]
    assert plan.alone == [root, root / "knowledge"]
    assert plan.whole == [root / "knowledge" / "real", root / "skills"]
    assert not plan.polled and not plan.unreadable


def test_a_link_to_a_big_tree_adds_no_watch(
    tmp_path: Path, settings: Settings, clock: ManualClock
) -> None:
    with app_client(create_app(settings, clock=clock), settings) as client:
        made = client.post("/v1/memories/knowledge", json={"name": "seen", "body": "zebra"})
        assert made.status_code == 201, made.text
    without_link = _inotify_watches()
    knowledge = settings.data_dir / "memory/knowledge"
    (knowledge / "linked").symlink_to(_outside(tmp_path), target_is_directory=True)
    with app_client(create_app(settings, clock=clock), settings) as client:
        _until("the watch is up", lambda: _inotify_watches() > without_link)
        _until("a hand edit beside the link is indexed", written_by_hand(knowledge, client))
        watches = _inotify_watches() - without_link
        assert 0 < watches < OUTSIDE_FOLDERS // 3, watches
        listed = client.get("/v1/health").json()
        assert listed["index"]["status"] == "ok", listed["index"]
