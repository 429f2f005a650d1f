"""A benchmark killed with SIGTERM runs its ``finally`` blocks (its daemons and PostgreSQL
stop), as it does on Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import os, signal, sys, time
sys.path.insert(0, sys.argv[2])
from bench._signals import exit_cleanly_on_sigterm
exit_cleanly_on_sigterm()
try:
    os.kill(os.getpid(), signal.SIGTERM)
    signal.pause()  # not reached: the handler raises
finally:
    open(sys.argv[1], "w").write("cleaned up")
"""


def test_sigterm_runs_the_finally_blocks(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(mark), str(REPO)], capture_output=True, timeout=60
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    assert mark.read_text() == "cleaned up"


def test_without_it_sigterm_skips_them(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    script = SCRIPT.replace("exit_cleanly_on_sigterm()\n", "")
    done = subprocess.run(
        [sys.executable, "-c", script, str(mark), str(REPO)], capture_output=True, timeout=60
    )
    assert done.returncode == -signal.SIGTERM
    assert not mark.exists()
