"""The machine's zone, ``timezone = "local"`` (the default), keeps its rules."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx
import pytest

from somnid.memory.clock import resolve_timezone
from tests.daemon import start_daemon


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


@pytest.mark.parametrize("posix", ["JST-9", "UTC0", "CET-1CEST,M3.5.0,M10.5.0/3"])
def test_a_daemon_starts_under_a_posix_tz(tmp_path: Path, posix: str) -> None:
    """A probe: the dream scheduler asked tzlocal for the machine's zone, which refuses a
    POSIX ``TZ``; the start ended in a traceback, exit 1 (systemd restarted it five times)."""
    with start_daemon(tmp_path / "data", ("TZ", posix)) as daemon:
        auth = {"Authorization": f"Bearer {daemon.token}"}
        answer = httpx.get(f"{daemon.base_url}/v1/sleep/status", headers=auth, timeout=30)
        assert answer.status_code == 200, answer.text
        assert answer.json()["nextEligible"] is not None, answer.json()  # dreams are on
