"""History reads share the repository; a purge's prune takes it alone (history/gate.py)."""

from __future__ import annotations

import threading
import time

from somnid.history.gate import PruneGate


def test_reads_share_and_the_prune_waits_for_them_then_keeps_new_reads_out() -> None:
    gate = PruneGate()
    order: list[str] = []

    def prune() -> None:
        with gate.pruning():
            order.append("pruned")

    def read() -> None:
        with gate.reading():
            order.append("late read")

    with gate.reading(), gate.reading():  # two readers at once
        pruner = threading.Thread(target=prune)
        pruner.start()
        deadline = time.monotonic() + 30
        while not gate._pruning:  # the prune has asked for the repository
            assert time.monotonic() < deadline
            time.sleep(0.01)
        late = threading.Thread(target=read)
        late.start()
        order.append("readers done")
    pruner.join(timeout=30)
    late.join(timeout=30)
    assert order == ["readers done", "pruned", "late read"]
