"""One injectable source of time. Every timestamp somnid writes carries a time zone."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from pathlib import Path
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class Clock(Protocol):
    """Tells the current time, aware of the configured time zone."""

    @property
    def tz(self) -> dt.tzinfo: ...

    def now(self) -> dt.datetime: ...

    def running(self) -> tuple[str, float]:
        """This boot's id and the seconds the machine has run since (suspended time
        included): what the wall clock's moves are measured against (``UpkeepClock``)."""
        ...


def resolve_timezone(name: str) -> dt.tzinfo:
    """``"local"`` is the machine's zone; anything else is an IANA name (``Asia/Shanghai``)."""
    if name == "local":
        return local_zone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # "Europe" is a folder
        raise ValueError(f"unknown time zone: {name!r}") from exc


def local_zone() -> dt.tzinfo:
    """The machine's zone with its rules (``TZ``, else ``/etc/localtime``), so a change to or
    from summer time moves the offset while somnid runs; the offset of this moment only
    where neither names a zone (a time probe: the offset read at start stayed until a
    restart, and each night's last hour was filed under the next day)."""
    key = os.environ.get("TZ", "").removeprefix(":")
    with contextlib.suppress(ZoneInfoNotFoundError, ValueError, OSError):
        if not key:
            return _zone_file(Path("/etc/localtime"))
        return ZoneInfo(key) if not key.startswith("/") else _zone_file(Path(key))
    local = dt.datetime.now().astimezone().tzinfo
    return local if local is not None else dt.UTC


def _zone_file(path: Path) -> ZoneInfo:
    """The zone of a tz file: by its name when it is a link into a zoneinfo folder (shown
    as ``Europe/Berlin``), else read from the file."""
    target = str(path.resolve())
    if "/zoneinfo/" in target:
        with contextlib.suppress(ZoneInfoNotFoundError, ValueError, OSError):
            return ZoneInfo(target.rsplit("/zoneinfo/", 1)[1])
    with path.open("rb") as file:
        return ZoneInfo.from_file(file, key=path.name)


class SystemClock:
    """The real clock, in the configured zone, to the second."""

    def __init__(self, tz: dt.tzinfo) -> None:
        self._tz = tz

    @property
    def tz(self) -> dt.tzinfo:
        return self._tz

    def now(self) -> dt.datetime:
        return dt.datetime.now(self._tz).replace(microsecond=0)

    def running(self) -> tuple[str, float]:
        try:
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            return boot, time.clock_gettime(time.CLOCK_BOOTTIME)
        except (OSError, AttributeError):  # not Linux: one process's run is all it knows
            return f"pid {os.getpid()}", time.monotonic()


class ManualClock:
    """A clock that only moves when told to; for tests and simulations."""

    def __init__(self, start: dt.datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("ManualClock needs an aware datetime")
        self._now = start
        self._tz = start.tzinfo
        self._ran = 0.0

    @property
    def tz(self) -> dt.tzinfo:
        return self._tz

    def now(self) -> dt.datetime:
        return self._now

    def running(self) -> tuple[str, float]:
        return "manual", self._ran

    def advance(self, delta: dt.timedelta) -> None:
        """Time passes: the wall clock and the machine's run move together."""
        self._now = self._now + delta
        self._ran += max(0.0, delta.total_seconds())

    def set(self, when: dt.datetime) -> None:
        self.advance(when.astimezone(self._tz) - self._now)
        self._now = when.astimezone(self._tz)

    def jump(self, delta: dt.timedelta) -> None:
        """The wall clock is set (a person, NTP): it moves, the machine's run does not."""
        self._now = self._now + delta


FIRST_YEAR, LAST_YEAR = 2, 9998
_A_DAY = dt.timedelta(days=1)
"""The years of a time somnid reads or takes. Python's range is 1-9999, but a time at its very
edge cannot be moved into another zone (year 1 at +14:00 is before the first instant in UTC),
nor a day or a month either side of it; a year of slack at each end keeps every such step in
range. A time outside is unreadable (read) or refused (taken)."""


def in_range(when: dt.date) -> bool:
    return FIRST_YEAR <= when.year <= LAST_YEAR


def to_datetime(value: object, tz: dt.tzinfo) -> dt.datetime | None:
    """Read a front-matter time: a datetime, a date, or an ISO string; naive ones get ``tz``.

    A date alone (the original plugin wrote dates only) means midnight of that day in ``tz``.
    Anything unreadable is None, and so is a time outside :data:`FIRST_YEAR`..:data:`LAST_YEAR`.
    """
    when: dt.datetime
    if isinstance(value, dt.datetime):
        when = value
    elif isinstance(value, dt.date):
        when = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            try:
                day = dt.date.fromisoformat(text[:10])
            except ValueError:
                return None
            when = dt.datetime(day.year, day.month, day.day)
    else:
        return None
    if not in_range(when):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=tz)
    return when


def parse_time(text: str) -> dt.datetime:
    """A time a client gives: an ISO 8601 date or date-time, whole (naive if it names no
    zone). ValueError says what is wrong: not ISO 8601, or outside the years somnid reads."""
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text[:64]!r} is not an ISO 8601 time such as 2023-05-08T13:56:00+02:00"
        ) from None
    inside = in_range(when)
    if inside and len(text.strip()) > len("2026-12-31"):  # a time of day, not a date alone
        try:  # a day inside either edge: no zone may move it out (it is kept in UTC)
            inside = in_range(when - _A_DAY) and in_range(when + _A_DAY)
        except OverflowError:
            inside = False
    if not inside:
        raise ValueError(f"{text[:64]!r} is outside the years {FIRST_YEAR}-{LAST_YEAR}")
    return when


def local_date(value: object, tz: dt.tzinfo) -> dt.date | None:
    """The calendar day of a front-matter time, in ``tz``. A date alone is a day wherever
    it falls (``9999-12-31``, a "never" of a due date, included): no zone moves it."""
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if isinstance(value, str) and len(value.strip()) == len("2026-12-31"):
        with contextlib.suppress(ValueError):
            return dt.date.fromisoformat(value.strip())
    when = to_datetime(value, tz)
    return None if when is None else when.astimezone(tz).date()
