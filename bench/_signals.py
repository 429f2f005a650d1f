"""A benchmark stopped with SIGTERM cleans up as Ctrl-C does.

Python's default SIGTERM ends the process without running ``finally`` blocks, so a killed
run left its ``somnid serve`` children and its embedded PostgreSQL running.
"""

from __future__ import annotations

import signal
from types import FrameType


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def exit_cleanly_on_sigterm() -> None:
    """Turn SIGTERM into ``SystemExit``: the ``finally`` blocks stop daemons and servers."""
    signal.signal(signal.SIGTERM, _exit)
