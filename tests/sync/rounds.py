"""How long sync's rounds take, on two real daemons and a bare remote in a temp dir.

Not a test (no assertion): ``.venv/bin/python -m tests.sync.rounds`` prints the figures
quoted in the sync work's report (a first push and pull of 200 entries, a round with
nothing to do, a merge of one entry both changed, a write's way to the other machine).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from tests.daemon import Daemon
from tests.sync.helpers import bare_remote, indexed, machine, patch, sync, wait_for, write

ENTRIES = 200
REPEATS = 5


def _timed(daemon: Daemon) -> float:
    began = time.perf_counter()
    sync(daemon)
    return (time.perf_counter() - began) * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        remote = bare_remote(tmp / "remote.git")
        with machine(tmp / "a" / "data", remote) as a, machine(tmp / "b" / "data", remote) as b:
            for number in range(ENTRIES):
                write(a, f"entry-{number}", f"body {number}\nline two\n", tags=["x"])
            print(f"first push of {ENTRIES} entries: {_timed(a):.0f} ms")
            print(f"first pull of {ENTRIES} entries (two histories merged): {_timed(b):.0f} ms")
            wait_for(lambda: indexed(b) == ENTRIES, "b's index has them")
            idle = [_timed(a) for _ in range(REPEATS * 2)]
            print(f"a round with nothing to do: median {statistics.median(idle):.0f} ms")
            merges = []
            for number in range(REPEATS):
                patch(a, f"entry-{number}", description=f"from a {number}")
                patch(b, f"entry-{number}", fields={"tags": ["x", f"b{number}"]})
                _timed(a)
                merges.append(_timed(b))
            print(f"a merge of one entry both changed: median {statistics.median(merges):.0f} ms")
            ways = []
            for number in range(REPEATS):
                patch(a, f"entry-{10 + number}", body=f"changed {number}\n")
                began = time.perf_counter()
                sync(a)
                sync(b)
                ways.append((time.perf_counter() - began) * 1000)
            print(f"a write's way to b (a's round, b's): median {statistics.median(ways):.0f} ms")


if __name__ == "__main__":
    main()
