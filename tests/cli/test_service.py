"""``somnid install-service``: the unit it writes, checked by systemd's own parser, and what
it says when it cannot enable it. A stand-in ``systemctl`` on PATH plays the user manager:
a test must never enable a service in the real one of whoever runs the tests."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from somnid.cli.service import TEMPLATE, in_temporary, render
from somnid.config import Settings
from tests.cli.runner import cli_env, somnid
from tests.daemon import free_port

ROOT = Path(__file__).parents[2]
ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed")


def verify(unit: Path) -> str:
    """What ``systemd-analyze verify`` says about ``unit`` (nothing when it is clean)."""
    assert ANALYZE is not None
    result = subprocess.run(
        [ANALYZE, "verify", str(unit)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    return (result.stdout + result.stderr).strip()


def stand_in_systemctl(bin_dir: Path, log: Path, *, status: int = 0, stderr: str = "") -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "systemctl"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> {log}\n'
        'case "$*" in *is-active*) echo active;; esac\n'
        f"[ -n '{stderr}' ] && echo '{stderr}' >&2\n"
        f"exit {status}\n"
    )
    script.chmod(0o755)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return cli_env(tmp_path / "data", free_port(), SOMNID_TOKEN="never-written-down")


def unit_file(env: dict[str, str]) -> Path:
    return Path(env["XDG_CONFIG_HOME"]) / "systemd" / "user" / "somnid.service"


def test_the_committed_template_is_the_one_install_service_uses() -> None:
    committed = (ROOT / "deploy/systemd/somnid.service").read_text()
    assert committed == TEMPLATE, "deploy/systemd/somnid.service and service.TEMPLATE differ"


@needs_analyze
def test_the_template_itself_is_a_clean_unit(tmp_path: Path) -> None:
    # As committed it starts %h/.local/bin/somnid; give it one to find.
    unit = tmp_path / "somnid.service"
    fake = tmp_path / "somnid"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    unit.write_text(TEMPLATE.replace("%h/.local/bin/somnid", str(fake)))
    assert verify(unit) == ""


@needs_analyze
def test_install_service_writes_a_unit_systemd_accepts(env: dict[str, str]) -> None:
    result = somnid(env, "install-service", "--no-enable")
    assert result.returncode == 0, result.stderr
    unit = unit_file(env)
    text = unit.read_text()
    data_dir = env["SOMNID_DATA_DIR"]
    lines = text.splitlines()
    for line in (
        "Type=notify",
        "NotifyAccess=main",
        "Restart=on-failure",
        "RestartPreventExitStatus=2 3",
        "TimeoutStopSec=60",  # shutdown_timeout_s is 10
        "UMask=0077",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        f"ReadWritePaths={data_dir} /tmp /var/tmp",  # the test's data dir is under /tmp
        f"ExecStart={sys.executable} -m somnid serve",
        f'Environment="SOMNID_DATA_DIR={data_dir}"',
        f'Environment="SOMNID_PORT={env["SOMNID_PORT"]}"',
        "WantedBy=default.target",
    ):
        assert line in lines, line
    assert "never-written-down" not in text  # the token stays out of the unit
    assert "SOMNID_TOKEN is set in this shell but not written into the unit" in result.stdout
    assert f"wrote {unit}" in result.stdout
    assert "not enabled (--no-enable)" in result.stdout
    assert stat.S_IMODE(Path(data_dir).stat().st_mode) == 0o700  # made for ReadWritePaths
    assert verify(unit) == ""

    again = somnid(env, "install-service", "--no-enable")
    assert again.returncode == 0 and f"updated {unit}" in again.stdout


def test_a_unit_carrying_a_key_is_readable_by_its_owner_alone(env: dict[str, str]) -> None:
    """A probe: ``SOMNID_EMBED_API_KEY`` (and a DSN's password) went into a unit of mode
    0644 under umask 022. The service needs them; only its owner may read them."""
    env["SOMNID_EMBED_API_KEY"] = "sk-secret123"
    env["SOMNID_EMBED__API_KEY_ENV"] = "SOMNID_EMBED_API_KEY"  # a name, no secret
    env["SOMNID_SYNC__REMOTE"] = "https://me:pat-123@git.example.org/memory.git"
    unit = unit_file(env)
    unit.parent.mkdir(parents=True)
    unit.write_text("# an older unit\n")
    unit.chmod(0o644)
    result = somnid(env, "install-service", "--no-enable")
    assert result.returncode == 0, result.stderr
    assert 'Environment="SOMNID_EMBED_API_KEY=sk-secret123"' in unit.read_text()
    assert stat.S_IMODE(unit.stat().st_mode) == 0o600
    note = "note: SOMNID_EMBED_API_KEY, SOMNID_SYNC__REMOTE written into the unit, which only"
    assert note in result.stdout, result.stdout


def test_the_stop_timeout_stays_above_the_shutdown_budget(env: dict[str, str]) -> None:
    env["SOMNID_SHUTDOWN_TIMEOUT_S"] = "120"
    result = somnid(env, "install-service", "--dry-run")
    assert result.returncode == 0
    assert "TimeoutStopSec=170" in result.stdout.splitlines()
    assert not unit_file(env).exists() and not Path(env["SOMNID_DATA_DIR"]).exists()


@needs_analyze
def test_odd_paths_are_quoted_for_systemd(tmp_path: Path) -> None:
    folder = tmp_path / "my 100% $HOME"
    folder.mkdir()
    exe = folder / "somnid"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    settings = Settings(data_dir=folder / "data")
    unit = tmp_path / "somnid.service"
    unit.write_text(render([str(exe), "serve"], settings, {"SOMNID_LOG_LEVEL": "debug"}))
    text = unit.read_text()
    assert f'ExecStart="{tmp_path}/my 100%% $HOME/somnid" serve' in text
    assert f'ReadWritePaths="{tmp_path}/my 100%% $HOME/data"' in text
    assert verify(unit) == ""


def test_enabling_runs_reload_enable_restart(env: dict[str, str], tmp_path: Path) -> None:
    log = tmp_path / "systemctl.log"
    stand_in_systemctl(tmp_path / "bin", log)
    env["PATH"] = str(tmp_path / "bin")
    result = somnid(env, "install-service")
    assert result.returncode == 0, result.stderr
    assert log.read_text().splitlines() == [
        "--user daemon-reload",
        "--user enable somnid.service",
        "--user restart somnid.service",
        "--user is-active somnid.service",
    ]
    assert "somnid.service is enabled and active" in result.stdout
    assert "journalctl --user -u somnid -f" in result.stdout


def test_an_unreachable_user_manager_is_said_plainly(env: dict[str, str], tmp_path: Path) -> None:
    log = tmp_path / "systemctl.log"
    stand_in_systemctl(
        tmp_path / "bin", log, status=1, stderr="Failed to connect to bus: No medium found"
    )
    env["PATH"] = str(tmp_path / "bin")
    result = somnid(env, "install-service")
    assert result.returncode == 1
    assert unit_file(env).exists()
    assert result.stderr.endswith(  # after the warning for a data dir under /tmp
        "somnid: the unit is written, but the systemd user manager cannot be reached (Failed "
        "to connect to bus: No medium found). Where it runs (a login session, or after "
        "`loginctl enable-linger $USER`), start the service with: systemctl --user "
        "daemon-reload && systemctl --user enable --now somnid\n"
    )


def test_without_systemd_it_writes_the_unit_and_says_what_to_do(
    env: dict[str, str], tmp_path: Path
) -> None:
    env["PATH"] = str(tmp_path / "empty")
    result = somnid(env, "install-service")
    assert result.returncode == 1
    assert unit_file(env).exists()
    assert "there is no systemctl here: without systemd, run `somnid serve`" in result.stderr


def test_a_setting_with_a_line_break_writes_no_unit(env: dict[str, str]) -> None:
    # The line break started a directive of its own in the unit (`ExecStartPre=…`); the
    # unit was written before systemd-analyze refused it, and left in place.
    unit = unit_file(env)
    assert somnid(env, "install-service", "--no-enable").returncode == 0
    before = unit.read_text()
    forged = {**env, "SOMNID_DREAM__OPENAI__MODEL": "a\nExecStartPre=/bin/touch /tmp/x"}
    result = somnid(forged, "install-service", "--no-enable")
    assert result.returncode == 2, result.stdout
    assert "SOMNID_DREAM__OPENAI__MODEL holds a control character (0xa)" in result.stderr
    assert unit.read_text() == before and "ExecStartPre" not in before


def test_a_data_dir_under_tmp_is_warned_of_and_the_service_can_see_it(
    env: dict[str, str], tmp_path: Path
) -> None:
    """An ops probe: the unit's private /tmp (PrivateTmp=yes) hid a data dir under /tmp from
    the service, and nothing said that the system empties /tmp."""
    assert in_temporary(tmp_path) and not in_temporary(Path("/home/someone/.local/share/somnid"))
    result = somnid(env, "install-service", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "is under /tmp or /var/tmp, which the system empties" in result.stderr
    assert "PrivateTmp=no" in result.stdout.splitlines()
    assert f"ReadWritePaths={env['SOMNID_DATA_DIR']} /tmp /var/tmp" in result.stdout.splitlines()
    elsewhere = render(["somnid", "serve"], Settings(data_dir=Path("/srv/mem")), {})
    assert "PrivateTmp=yes" in elsewhere.splitlines()


def test_a_unit_that_is_a_link_is_written_through_it_and_a_masked_one_is_refused(
    env: dict[str, str], tmp_path: Path
) -> None:
    # A probe: the unit kept in a person's dotfiles, linked into ~/.config/systemd/user, was
    # replaced by a file: the dotfiles never saw the new unit, the link was gone.
    unit = unit_file(env)
    unit.parent.mkdir(parents=True)
    kept = tmp_path / "dotfiles" / "somnid.service"
    kept.parent.mkdir()
    kept.write_text("# the person's copy\n")
    unit.symlink_to(kept)
    result = somnid(env, "install-service", "--no-enable")
    assert result.returncode == 0, result.stderr
    assert unit.is_symlink() and unit.resolve() == kept.resolve()
    assert "ExecStart=" in kept.read_text() and f"(→ {kept.resolve()})" in result.stdout
    unit.unlink()
    unit.symlink_to(os.devnull)  # what `systemctl --user mask` makes
    masked = somnid(env, "install-service", "--no-enable")
    assert masked.returncode == 1 and "is masked" in masked.stderr, masked.stderr
    assert unit.is_symlink() and unit.resolve() == Path(os.devnull)
    # A review: a loop was a traceback, a dangling link wrote folders where it pointed,
    # and the template itself (`systemctl --user link` of a checkout's) was overwritten.
    template = tmp_path / "checkout" / "somnid.service"
    template.parent.mkdir()
    template.write_text(TEMPLATE)
    for target in (unit, tmp_path / "nowhere" / "somnid.service", template):
        unit.unlink()
        unit.symlink_to(target)
        replaced = somnid(env, "install-service", "--no-enable")
        assert replaced.returncode == 0, replaced.stderr
        assert "in place of a link to" in replaced.stdout, replaced.stdout
        assert not unit.is_symlink() and "ExecStart=" in unit.read_text()
    assert template.read_text() == TEMPLATE and not (tmp_path / "nowhere").exists()
