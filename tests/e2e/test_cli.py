"""The somnid command line, run as a person would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from somnid.cli import main


def run(*args: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(env_home), "XDG_CONFIG_HOME": str(env_home / "c")}
    return subprocess.run(
        [sys.executable, "-m", "somnid", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


def test_model_install_shows_progress_and_is_idempotent(tmp_path: Path) -> None:
    first = run("model", "install", "--data-dir", str(tmp_path / "data"), env_home=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "quantising" in first.stderr and "100%" in first.stderr
    model = tmp_path / "data/models/multilingual-e5-small"
    assert {p.name for p in model.iterdir()} >= {"model.onnx", "tokenizer.json", "config.json"}
    again = run("model", "install", "--data-dir", str(tmp_path / "data"), env_home=tmp_path)
    assert again.returncode == 0 and "model ready" in again.stderr


def test_openapi_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["openapi"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["info"]["title"] == "somnid"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    result = run("frobnicate", env_home=tmp_path)
    assert result.returncode == 2 and "invalid choice" in result.stderr
