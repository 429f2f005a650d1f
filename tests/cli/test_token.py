"""``somnid token`` with no daemon: the token file and the data dir it makes."""

from __future__ import annotations

import stat
from pathlib import Path

from tests.cli.runner import cli_env, somnid


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_token_on_a_new_data_dir_makes_it_the_owners_alone(tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / "data"
    run = somnid(cli_env(data_dir, 9), "token")
    assert run.returncode == 0, run.stderr
    token = (data_dir / "token").read_text().strip()
    assert run.stdout == f"{token}\n" and len(token) >= 32
    # Memory will be written here: other local users may not list or read it (was 0755).
    assert mode(data_dir) == 0o700 and mode(tmp_path / "new") == 0o700
    assert mode(data_dir / "token") == 0o600
    assert somnid(cli_env(data_dir, 9), "token").stdout == run.stdout  # kept, not remade
