"""The machine's zone, ``timezone = "local"`` (the default), keeps its rules."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from somnid.memory.clock import resolve_timezone


def test_local_follows_summer_time_while_somnid_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A time probe: the offset read at start stayed until a restart, so after the change
    from summer time each night's last hour was filed under the next day."""
    monkeypatch.setenv("TZ", "Europe/Berlin")
    zone = resolve_timezone("local")
    summer = dt.datetime(2027, 7, 1, 12, tzinfo=dt.UTC).astimezone(zone)
    winter = dt.datetime(2027, 11, 14, 22, 30, tzinfo=dt.UTC).astimezone(zone)
    assert summer.utcoffset() == dt.timedelta(hours=2)
    assert winter.utcoffset() == dt.timedelta(hours=1)
    assert winter.date() == dt.date(2027, 11, 14)  # 23:30 on the 14th, not 00:30 on the 15th
    monkeypatch.setenv("TZ", ":America/New_York")  # glibc's form
    assert dt.datetime(2027, 1, 5, tzinfo=zone).astimezone(resolve_timezone("local")).hour == 18


def test_local_reads_a_zone_file_by_path(monkeypatch: pytest.MonkeyPatch) -> None:
    berlin = Path("/usr/share/zoneinfo/Europe/Berlin")
    if not berlin.exists():
        pytest.skip("no zoneinfo files on this machine")
    monkeypatch.setenv("TZ", str(berlin))
    zone = resolve_timezone("local")
    assert dt.datetime(2027, 7, 1, tzinfo=zone).utcoffset() == dt.timedelta(hours=2)
    assert dt.datetime(2027, 12, 1, tzinfo=zone).utcoffset() == dt.timedelta(hours=1)
    monkeypatch.delenv("TZ")
    assert resolve_timezone("local") is not None  # /etc/localtime, or the offset of now
