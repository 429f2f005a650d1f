"""Commands with no daemon running: what they say, what they do to the data dir themselves."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

from somnid.store.lock import DataDirLock
from tests.cli.runner import cli_env, somnid, somnid_on_terminal
from tests.daemon import free_port

BROKEN = "memory/knowledge/broken-by-hand/SKILL.md"


def offline_env(data_dir: Path, **extra: str) -> dict[str, str]:
    return cli_env(data_dir, free_port(), **extra)


def test_daemon_commands_say_it_is_not_running(data_dir: Path) -> None:
    env = offline_env(data_dir)
    port = env["SOMNID_PORT"]
    for command in (["status"], ["recall", "x"], ["sleep", "status"], ["sleep", "run"]):
        result = somnid(env, *command)
        assert result.returncode == 4, command
        # The command to start the daemon asked about, not one on the default data dir.
        assert result.stderr == (
            f"somnid: somnid is not running at http://127.0.0.1:{port} (start it with "
            f"`somnid serve --data-dir {data_dir} --port {port}`, or `systemctl --user start "
            "somnid` if it is installed as a service)\n"
        )


def test_doctor_explains_what_is_wrong_with_a_data_dir(original_data_dir: Path) -> None:
    broken = original_data_dir / BROKEN
    broken.parent.mkdir(parents=True)
    broken.write_text("---\nname: broken-by-hand\ndescription: [unclosed\n---\nbody\n")
    token = original_data_dir / "token"
    token.write_text("a-token-others-can-read\n")
    token.chmod(0o644)
    env = offline_env(original_data_dir, SOMNID_EMBED__PROVIDER="local")

    doctor = somnid(env, "doctor")
    assert doctor.returncode == 1
    assert doctor.stderr == ""  # the broken file's log warning, printed before the report: gone
    out = doctor.stdout
    assert "FAIL  memory files  1 file(s) cannot be read" in out
    assert f"{BROKEN}: front-matter is not valid YAML" in out
    assert "→ repair each by hand" in out
    assert f"FAIL  token         {token} can be read by others (mode 0644)" in out
    assert f"→ `chmod 600 {token}`" in out
    assert f"WARN  model         not installed in {original_data_dir}/models/" in out
    assert "→ `somnid model install`" in out
    assert "WARN  daemon        somnid is not running" in out
    assert "OK    index         not built yet" in out
    assert "WARN  file modes    " in out and "can be read by other local users" in out
    assert f"→ `chmod -R go-rwx {original_data_dir}`" in out
    assert out.rstrip().endswith("2 failed, 3 to look at")
    # Looking changed nothing.
    assert stat.S_IMODE(token.stat().st_mode) == 0o644
    assert not (original_data_dir / "index").exists()


def test_a_daemon_that_holds_the_data_dir_but_does_not_answer_is_not_said_to_be_down(
    data_dir: Path,
) -> None:
    """A probe: while a daemon started (19 s with 6,400 waiting logs), the CLI said "not
    running … start it with `somnid serve`", which would exit 3 ("already running")."""
    env = offline_env(data_dir)
    data_dir.mkdir(parents=True)
    lock = DataDirLock(data_dir)
    lock.acquire()  # as a starting daemon holds it, before it listens
    try:
        result = somnid(env, "status")
    finally:
        lock.release()
    assert result.returncode == 4
    assert f"(pid {os.getpid()}) holds the data dir {data_dir} but does not answer" in (
        result.stderr
    ), result.stderr
    assert "start it with" not in result.stderr


def test_doctor_reports_a_data_dir_that_is_a_file(tmp_path: Path) -> None:
    """A probe: one line, "Not a directory: …/token", exit 1, no report (nor JSON)."""
    data = tmp_path / "data"
    data.write_text("hi\n")
    doctor = somnid(offline_env(data), "doctor")
    assert doctor.returncode == 1, doctor.stderr
    assert doctor.stderr == ""
    assert f"FAIL  data dir  {data} is not a directory" in doctor.stdout, doctor.stdout
    as_json = somnid(offline_env(data), "doctor", "--json")
    found = json.loads(as_json.stdout)
    assert not found["ok"] and {f["check"] for f in found["findings"]} >= {"data dir", "token"}


def test_doctor_reports_a_configuration_that_does_not_load(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[recall]\nvector_weight = 'heavy'\n")
    doctor = somnid(offline_env(tmp_path / "data"), "--config", str(config), "doctor")
    assert doctor.returncode == 1
    assert doctor.stdout.startswith("FAIL  config  the configuration does not load:")
    assert f"→ fix {config} or the SOMNID_* variables" in doctor.stdout


def test_reindex_offline_rebuilds_an_unreadable_index(original_data_dir: Path) -> None:
    index = original_data_dir / "index" / "index.sqlite"
    index.parent.mkdir()
    index.write_bytes(b"this is not a database" * 100)
    env = offline_env(original_data_dir)
    doctor = somnid(env, "doctor")
    assert f"FAIL  index         {index} cannot be read" in doctor.stdout
    assert "→ `somnid reindex` (with the daemon stopped) deletes and rebuilds it" in doctor.stdout

    run = somnid_on_terminal(env, "reindex")
    assert run.returncode == 0, run.screen
    assert "is damaged (file is not a database)" in run.screen  # set aside, made again
    assert "reading files" in run.screen and "100%" in run.screen
    with sqlite3.connect(index) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM entries")}
    assert "release-checklist" in names
    assert f"index rebuilt: {len(names)} entries from {len(names)} files" in run.screen
    after = somnid(env, "doctor")
    assert (
        f"OK    index         {len(names)} entries for {len(names)} readable files" in after.stdout
    )
    assert not (original_data_dir / ".somnid.lock").read_text()  # released


def test_token_is_created_when_missing_and_rotated_on_demand(data_dir: Path) -> None:
    env = offline_env(data_dir)
    first = somnid(env, "token")
    assert first.returncode == 0, first.stderr
    token = data_dir / "token"
    assert first.stdout == token.read_text()
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert somnid(env, "token").stdout == first.stdout

    rotated = somnid(env, "token", "--rotate")
    assert rotated.returncode == 0
    assert rotated.stdout != first.stdout and rotated.stdout == token.read_text()
    assert f"wrote a new token to {token}" in rotated.stderr
    assert stat.S_IMODE(token.stat().st_mode) == 0o600

    configured = somnid(offline_env(data_dir, SOMNID_TOKEN="from-config"), "token", "--rotate")
    assert configured.returncode == 1 and "set in the configuration" in configured.stderr


def test_a_path_that_cannot_be_used_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data", free_port())
    done = somnid(env, "openapi", "--out", str(tmp_path / "no-such-folder" / "api.json"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        == f"somnid: No such file or directory: {tmp_path}/no-such-folder/api.json"
    )
    afile = tmp_path / "a-file"
    afile.write_text("x\n")
    doctor = somnid(env, "doctor", "--data-dir", str(afile))
    assert "Traceback" not in doctor.stderr + doctor.stdout, doctor.stderr


def test_a_relative_data_dir_is_the_folder_named_from_where_somnid_runs(
    original_data_dir: Path,
) -> None:
    """``--data-dir d1`` crashed doctor (SQLite's file URI of a relative path), and named git
    another folder than the one served."""
    env = offline_env(original_data_dir)
    env.pop("SOMNID_DATA_DIR")
    built = somnid(
        env, "reindex", "--data-dir", original_data_dir.name, cwd=original_data_dir.parent
    )
    assert built.returncode == 0, built.stderr
    doctor = somnid(
        env, "doctor", "--data-dir", original_data_dir.name, cwd=original_data_dir.parent
    )
    assert "Traceback" not in doctor.stderr, doctor.stderr
    assert "OK    index" in doctor.stdout, doctor.stdout
    assert "history" in doctor.stdout and "not a git repository" not in doctor.stdout


def test_the_original_sidecar_s_variables_are_said_to_be_unread(data_dir: Path) -> None:
    """An ops probe: SOMNI_EMBED_MODEL_PATH, the original's, was ignored without a word."""
    env = offline_env(data_dir, SOMNI_EMBED_MODEL_PATH="/models/bge", SOMNI_FOO="1")
    doctor = somnid(env, "doctor")
    said = " ".join(doctor.stdout.split())  # the columns' width depends on the names
    assert (
        "WARN config the original sidecar's variables are not read: SOMNI_EMBED_MODEL_PATH "
        "(somnid's is SOMNID_EMBED__MODEL_DIR), SOMNI_FOO"
    ) in said, doctor.stdout
