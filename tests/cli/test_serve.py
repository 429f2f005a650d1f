"""``somnid serve`` exit statuses, as systemd's RestartPreventExitStatus= reads them."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

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


def _one_line_error(done: subprocess.CompletedProcess[str], status: int, says: str) -> None:
    assert done.returncode == status, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("somnid: ") and says in lines[-1], done.stderr


def test_a_data_dir_that_is_a_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    afile = tmp_path / "data"
    afile.write_text("not a folder\n")
    done = somnid(cli_env(afile, free_port()), "serve")
    _one_line_error(done, 2, "is a file, not a folder")
    below = somnid(cli_env(afile / "deeper", free_port()), "serve")
    _one_line_error(below, 2, "(above the data dir) is a file")


def test_a_read_only_data_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mount)],
        capture_output=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {made.stderr.decode().strip()}")
    try:
        done = somnid(cli_env(mount / "data", free_port()), "serve")
        _one_line_error(done, 2, "Read-only file system")
        # doctor says what helps: no chown, no reindex.
        doctor = somnid(cli_env(mount, free_port()), "doctor")
        assert "on a read-only file system" in doctor.stdout, doctor.stdout
        assert "chown -R" not in doctor.stdout
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_purge_without_confirm_and_no_terminal_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = somnid(cli_env(tmp_path / "data", free_port()), "purge", "knowledge", "old-vpn")
    _one_line_error(done, 2, "--confirm 'old-vpn'")


def test_a_taken_port_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = somnid(cli_env(tmp_path / "data", port), "serve")
    _one_line_error(done, 1, f"cannot listen on 127.0.0.1:{port}: Address already in use")
    assert "--port or SOMNID_PORT" in done.stderr
    said = done.stdout + done.stderr
    assert "startup complete" not in said and "Application startup" not in said
    assert "listening on" not in said


def test_a_bad_config_value_names_the_file_and_the_key(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data", free_port())
    config = Path(env["XDG_CONFIG_HOME"]) / "somnid" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[recall]\nrrf_k = 0\n\n[history]\nbatch_window_s = "soon"\n')
    done = somnid(env, "status")
    _one_line_error(done, 2, f"{config}: recall.rrf_k = 0: Input should be greater than")
    assert f"{config}: history.batch_window_s = 'soon': Input should be a valid number" in (
        done.stderr
    )
    assert "validation error" not in done.stderr and "pydantic" not in done.stderr

    from_env = somnid({**env, "SOMNID_RECALL__RRF_K": "many"}, "status")
    _one_line_error(from_env, 2, "SOMNID_RECALL__RRF_K='many': Input should be a valid integer")


def test_an_empty_data_dir_is_refused_not_taken_for_the_current_folder(tmp_path: Path) -> None:
    here = tmp_path / "project"
    here.mkdir()
    env = cli_env(tmp_path / "data", free_port())
    from_env = subprocess.run(
        [sys.executable, "-m", "somnid", "serve"], env={**env, "SOMNID_DATA_DIR": ""}, cwd=here,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    _one_line_error(from_env, 2, "SOMNID_DATA_DIR='': empty: name a folder")
    from_flag = subprocess.run(
        [sys.executable, "-m", "somnid", "serve", "--data-dir", ""], env=env, cwd=here,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert from_flag.returncode == 2 and "--data-dir: empty" in from_flag.stderr
    assert list(here.iterdir()) == []  # nothing made, nothing re-moded


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"SOMNID_TIMEZONE": "Mars/Olympus"}, "SOMNID_TIMEZONE='Mars/Olympus': unknown time zone"),
        ({"SOMNID_DREAM__QUIET_WINDOWS": '["garbage"]'}, "quiet window 'garbage' is not like"),
        ({"SOMNID_TOKEN": " "}, "SOMNID_TOKEN"),
        ({"SOMNID_DREAM__IDLE_MS": "1000000000000000"}, "SOMNID_DREAM__IDLE_MS="),
    ],
)
def test_settings_that_would_fail_at_start_are_one_line_and_exit_2(
    tmp_path: Path, extra: dict[str, str], says: str
) -> None:
    done = somnid(cli_env(tmp_path / "data", free_port(), **extra), "serve")
    _one_line_error(done, 2, says)


def test_what_a_person_left_in_the_data_dir_is_one_line_and_exit_2(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "index").write_text("x\n")
    _one_line_error(somnid(cli_env(data, free_port()), "serve"), 2, "index is a file where")
    (data / "index").unlink()
    (data / "token").mkdir()
    _one_line_error(somnid(cli_env(data, free_port()), "serve"), 2, "token is not a file")
    (data / "token").rmdir()
    (data / "token").write_bytes(b"\xff\xfe")
    _one_line_error(somnid(cli_env(data, free_port()), "serve"), 2, "is not text")
    (data / "token").unlink()
    # An index probe: a folder where the index file belongs ended the start in a traceback
    # (and `somnid reindex` in "Is a directory").
    (data / "index/index.sqlite").mkdir(parents=True)
    for command in ("serve", "reindex"):
        said = "index.sqlite is not a file: move it away"
        _one_line_error(somnid(cli_env(data, free_port()), command), 2 if command == "serve" else 1,
                        said)  # fmt: skip


def test_a_bad_flag_is_blamed_on_the_flag_not_on_the_environment(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data", free_port())
    done = somnid(env, "status", "--port", "99999")
    _one_line_error(done, 2, "port = 99999 (command line)")


def test_a_start_with_memory_moved_away_refuses_rather_than_delete_it(tmp_path: Path) -> None:
    # A review: memory/ moved away (to a backup) while somnid was down; the start made it
    # again, empty, and committed every entry as deleted (which sync carries everywhere).
    data = tmp_path / "data"
    (data / "memory/knowledge/k").mkdir(parents=True)
    (data / "memory/knowledge/k/SKILL.md").write_text("---\nname: k\ndescription: d\n---\nb\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "k"]):
        subprocess.run(
            ["git", "-C", str(data), "-c", "user.name=t", "-c", "user.email=t@t", *args],
            check=True,
        )
    (data / "memory").rename(tmp_path / "backup")
    done = somnid(cli_env(data, free_port()), "serve")
    _one_line_error(done, 2, "memory is missing, and history holds its files: put it back")
    assert not (data / "memory").exists()
    (tmp_path / "backup").rename(data / "memory")
    assert not (data / "skills").exists()  # missing too, but history holds none of it
    assert layout_problem_of(data) is None
    # A kind's folder alike (an index probe: `mv memory/knowledge` while somnid ran).
    (data / "memory/knowledge").rename(tmp_path / "knowledge")
    done = somnid(cli_env(data, free_port()), "serve")
    _one_line_error(done, 2, "knowledge is missing, and history holds its files")


def layout_problem_of(data: Path) -> str | None:
    from somnid.cli.serve import layout_problem
    from somnid.store.layout import Layout

    return layout_problem(Layout(data))
