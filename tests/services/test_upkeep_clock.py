"""Upkeep counts the days that went by, not the days the wall clock was set ahead."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock
from somnid.services.upkeep_clock import UpkeepClock
from tests.history.helpers import wait_for

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
    clock.jump(-5 * DAY)  # set back further than it was ahead: upkeep follows the wall clock
    assert again.now() == clock.now()


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


def test_a_last_decay_ahead_of_today_starts_again_from_today(
    client: TestClient, clock: ManualClock, data_dir: Path
) -> None:
    made = client.post("/v1/memories/knowledge", json={"name": "ahead", "description": "d"})
    assert made.status_code == 201
    path = data_dir / "memory/knowledge/ahead/SKILL.md"
    text = path.read_text()
    start = clock.now().date().isoformat()
    path.write_text(text.replace(f"last_decay: {start}", "last_decay: 2036-12-04", 1))

    def started_again() -> bool:  # once upkeep reads the hand edit (not before it sees it)
        assert client.post("/v1/maintenance/decay").json()["decayed"] == []
        return "2036-12-04" not in path.read_text()

    wait_for(started_again)
    clock.advance(DAY)
    report = client.post("/v1/maintenance/decay").json()
    assert [(c["name"], c["scoreAfter"]) for c in report["decayed"]] == [("ahead", 0.45)]
