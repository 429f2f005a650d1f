"""Quiet windows: the hours in which no dream starts (``dream.quiet_windows``)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from somnid.errors import InvalidInput

_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})(?:\s+(\S+))?\s*$")


@dataclass(frozen=True, slots=True)
class QuietWindow:
    start: dt.time
    end: dt.time
    zone: dt.tzinfo | None

    @classmethod
    def parse(cls, text: str) -> QuietWindow:
        """``"09:00-18:00 Asia/Shanghai"``; without a zone, the daemon's zone. May wrap
        midnight (``"22:00-07:00"``)."""
        match = _WINDOW.match(text)
        if not match:
            raise InvalidInput(f"quiet window {text!r} is not like '09:00-18:00 Asia/Shanghai'")
        h1, m1, h2, m2, zone = match.groups()
        try:
            start, end = dt.time(int(h1), int(m1)), dt.time(int(h2), int(m2))
        except ValueError as exc:
            raise InvalidInput(f"quiet window {text!r}: {exc}") from None
        try:
            tz = ZoneInfo(zone) if zone else None
        except (ValueError, ZoneInfoNotFoundError, OSError):  # OSError: "Europe" is a folder
            raise InvalidInput(f"quiet window {text!r}: unknown time zone {zone!r}") from None
        return cls(start, end, tz)

    def contains(self, when: dt.datetime) -> bool:
        local = when.astimezone(self.zone) if self.zone else when
        now = local.time().replace(tzinfo=None)
        if self.start <= self.end:
            return self.start <= now < self.end
        return now >= self.start or now < self.end
