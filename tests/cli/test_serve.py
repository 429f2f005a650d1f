"""``somnid serve`` exit statuses, as systemd's RestartPreventExitStatus= reads them."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.cli.runner import cli_env, daemon_env, somnid
from tests.daemon import Daemon, free_port


def test_a_taken_port_exits_1_without_saying_ready(tmp_path: Path) -> None:
    with (
        socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder,
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as notify,
    ):
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        notify.bind(str(tmp_path / "notify"))
        notify.setblocking(False)
        env = cli_env(
            tmp_path / "data", holder.getsockname()[1], NOTIFY_SOCKET=str(tmp_path / "notify")
        )
        result = somnid(env, "serve")
        assert result.returncode == 1
        said = []
        while True:
            try:
                said.append(notify.recv(4096).decode())
            except BlockingIOError:
                break
        assert said and not any("READY=1" in message.splitlines() for message in said)


def test_a_held_data_dir_exits_3(daemon: Daemon) -> None:
    result = somnid(daemon_env(daemon, SOMNID_PORT=str(free_port())), "serve")
    assert result.returncode == 3
    assert (
        f"another somnid (pid {daemon.process.pid}) is already using the data dir" in result.stderr
    )


def test_a_non_loopback_bind_without_the_flag_exits_2(tmp_path: Path) -> None:
    result = somnid(cli_env(tmp_path / "data", free_port(), SOMNID_HOST="0.0.0.0"), "serve")
    assert result.returncode == 2
    assert "refusing to bind '0.0.0.0': it is not a loopback address" in result.stderr
    assert not (tmp_path / "data").exists()
