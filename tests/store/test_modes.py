"""The data dir's modes against a real daemon: private whatever the umask, looser modes
repaired at start and said."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tests.daemon import start_daemon


def _loose(root: Path) -> list[str]:
    found = []
    for folder, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode & 0o077:
                found.append(f"{path.relative_to(root)} {mode:o}")
    return found


def test_data_dir_is_private_whatever_the_umask(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0o022)
    try:
        with start_daemon(data) as daemon:
            with daemon.client() as client:
                made = client.post("/v1/memories/knowledge", json={"name": "k", "body": "b"})
                assert made.status_code == 201
                client.post("/v1/intentions", json={"what": "call"}).raise_for_status()
            daemon.stop()
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert _loose(data) == []


def test_looser_modes_are_repaired_at_start_and_said(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with start_daemon(data) as daemon:
        with daemon.client() as client:
            client.post("/v1/memories/knowledge", json={"name": "k", "body": "b"})
        daemon.stop()
    entry = data / "memory" / "knowledge" / "k" / "MEMORY.md"
    if not entry.exists():
        entry = next(data.rglob("k/*.md"))
    data.chmod(0o755)
    entry.chmod(0o644)
    entry.parent.chmod(0o755)
    with start_daemon(data) as daemon:
        daemon.stop()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(entry.parent.stat().st_mode) == 0o700
    assert "repaired" in daemon.log()


def test_loose_paths_names_every_loose_path_and_no_other(tmp_path: Path) -> None:
    from somnid.store.modes import loose_paths, make_private

    root = tmp_path / "data"
    deep = root / "a" / "b" / "c"
    deep.mkdir(parents=True)
    for folder in (root, root / "a", root / "a" / "b", deep):
        folder.chmod(0o700)
    private, loose = deep / "private.md", deep / "loose.md"
    private.write_text("p")
    private.chmod(0o600)
    loose.write_text("l")
    loose.chmod(0o640)
    (root / "a" / "b").chmod(0o750)
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o755)
    (outside / "theirs.md").write_text("t")
    (outside / "theirs.md").chmod(0o644)
    (root / "a" / "link").symlink_to(outside)  # a link is neither followed nor named
    (root / "a" / "file-link").symlink_to(outside / "theirs.md")

    assert sorted(loose_paths(root)) == [root / "a" / "b", loose]
    assert sorted(make_private(root)) == [root / "a" / "b", loose]
    assert loose_paths(root) == []
    assert stat.S_IMODE(loose.stat().st_mode) == 0o600
    assert stat.S_IMODE((outside / "theirs.md").stat().st_mode) == 0o644
    assert loose_paths(tmp_path / "missing") == []
