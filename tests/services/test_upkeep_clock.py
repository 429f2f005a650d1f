"""Upkeep counts the days that went by, not the days the wall clock was set ahead."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from somnid.store.upkeep_clock import UpkeepClock

START = dt.datetime(2026, 10, 3, 12, tzinfo=dt.UTC)
DAY = dt.timedelta(days=1)


def test_a_jump_of_the_wall_clock_is_not_time_gone_by(tmp_path: Path) -> None:
    clock = ManualClock(START)
    upkeep = UpkeepClock(clock, tmp_path / "upkeep-clock.json")
    assert upkeep.now() == START
    clock.advance(2 * DAY)  # days go by: upkeep's days too
    assert upkeep.now() == START + 2 * DAY
    clock.jump(3650 * DAY)  # the clock set ten years ahead
    assert upkeep.now() == START + 2 * DAY
    clock.advance(DAY)
    assert upkeep.now() == START + 3 * DAY and upkeep.lag == 3650 * DAY
    clock.jump(dt.timedelta(minutes=30))  # NTP's small steps are no jump
    assert upkeep.now() == START + 3 * DAY + dt.timedelta(minutes=30)
    # A restart of the daemon keeps the lag; the clock set right gives it back.
    again = UpkeepClock(clock, tmp_path / "upkeep-clock.json")
    assert again.now() == START + 3 * DAY + dt.timedelta(minutes=30)
    clock.jump(-3650 * DAY)
    assert again.now() == clock.now() and again.lag == dt.timedelta(0)
    before = again.now()
    clock.jump(-5 * DAY)  # set back: upkeep's time goes on as the machine ran
    assert again.now() == before
    clock.advance(DAY)
    assert again.now() == before + DAY
    clock.jump(5 * DAY)  # set right again: the lag is given back
    assert again.now() == clock.now() and again.lag == dt.timedelta(0)


def test_a_new_boot_or_a_broken_file_starts_without_a_lag(tmp_path: Path) -> None:
    clock = ManualClock(START)
    path = tmp_path / "upkeep-clock.json"
    UpkeepClock(clock, path).now()
    clock.jump(100 * DAY)
    mark = json.loads(path.read_text())
    path.write_text(json.dumps(mark | {"boot": "another boot"}))
    assert UpkeepClock(clock, path).now() == clock.now()  # off meanwhile: the days count
    path.write_text("{not json")
    assert UpkeepClock(clock, path).now() == clock.now()


def test_a_clock_set_ahead_retires_and_expires_nothing(
    expiring: TestClient, clock: ManualClock
) -> None:
    """A time probe: the clock set ten years ahead, the next upkeep retired every memory
    and expired every intention; set right again, entries kept a `last_decay` ten years
    ahead and did not fade until then."""
    made = expiring.post("/v1/memories/knowledge", json={"name": "fact", "description": "d"})
    assert made.status_code == 201
    due = (clock.now() + 3 * DAY).date().isoformat()
    assert expiring.post("/v1/intentions", json={"what": "renew", "due": due}).status_code == 201
    assert expiring.post("/v1/maintenance/decay").json()["decayed"] == []
    clock.jump(3650 * DAY)
    report = expiring.post("/v1/maintenance/decay").json()
    assert (report["retired"], report["expiredIntentions"], report["decayed"]) == ([], [], [])
    clock.advance(DAY)  # a day goes by: a day's decay
    report = expiring.post("/v1/maintenance/decay").json()
    assert [(c["name"], c["scoreAfter"]) for c in report["decayed"]] == [("fact", 0.45)]
    clock.jump(-3650 * DAY)
    clock.advance(DAY)
    report = expiring.post("/v1/maintenance/decay").json()
    assert [(c["name"], c["scoreAfter"]) for c in report["decayed"]] == [("fact", 0.405)]


def test_a_clock_set_back_then_right_retires_nothing(
    expiring: TestClient, clock: ManualClock, data_dir: Path
) -> None:
    """A review: with upkeep following the wall clock back, every `last_decay` was moved
    ten years back, and once the clock was right again the next pass decayed ten years."""
    made = expiring.post("/v1/memories/knowledge", json={"name": "fact", "description": "d"})
    assert made.status_code == 201
    assert expiring.post("/v1/maintenance/decay").json()["decayed"] == []  # upkeep's mark
    clock.jump(-3650 * DAY)
    assert expiring.post("/v1/maintenance/decay").json()["decayed"] == []
    clock.jump(3650 * DAY)
    clock.advance(DAY)
    report = expiring.post("/v1/maintenance/decay").json()
    assert [(c["name"], c["scoreAfter"]) for c in report["decayed"]] == [("fact", 0.45)]
    assert report["retired"] == []
    text = (data_dir / "memory/knowledge/fact/SKILL.md").read_text()
    assert "last_decay: 2016" not in text  # never moved back with the clock
