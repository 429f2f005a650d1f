"""The time upkeep counts in: the wall clock, less what it jumped while the machine ran.

Decay catches up missed days at once and intentions expire by their due date, both by the
wall clock: set ten years ahead (by hand, by a wrong NTP source), the next upkeep retired
every memory and expired every intention (a time probe). So each pass measures how far the
wall clock moved against how long the machine ran (``Clock.running``: suspended time
included). A move by more than ``TOLERANCE`` beyond the run is a jump: upkeep counts on
from where it was, as the machine ran, and says so in the log; the clock set right again
takes the lag back, so upkeep's time never goes back within a boot. A restart of the
daemon keeps the lag (this file); a new boot starts without one, as the run cannot be
measured across it: time the machine was off counts, as missed days always have. (A
machine whose run stands still while its clock is stepped, a paused VM, counts those days
only after its next boot.)
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from dataclasses import asdict, dataclass
from pathlib import Path

from somnid.memory.clock import Clock
from somnid.store.atomic import write_atomic

log = logging.getLogger(__name__)

TOLERANCE = dt.timedelta(hours=1)
"""A wall-clock move this much beyond the machine's run is no jump (NTP steps, rounding)."""


@dataclass(frozen=True, slots=True)
class _Mark:
    boot: str
    ran: float  # seconds the machine had run at the last pass
    wall: float  # the wall clock then, as a POSIX timestamp
    lag: float  # seconds upkeep's time was behind the wall clock


class UpkeepClock:
    def __init__(self, clock: Clock, path: Path) -> None:
        self.clock = clock
        self.path = path
        self._mark: _Mark | None = None

    @property
    def tz(self) -> dt.tzinfo:
        return self.clock.tz

    def now(self) -> dt.datetime:
        """Upkeep's time now, and the mark the next call measures from (kept in the file)."""
        wall = self.clock.now()
        boot, ran = self.clock.running()
        before = self._mark or self._read()
        lag = 0.0
        if before is not None and before.boot == boot and ran >= before.ran:
            lag = before.lag
            drift = (wall.timestamp() - before.wall) - (ran - before.ran)
            if abs(drift) > TOLERANCE.total_seconds():
                # Back or ahead, upkeep's time goes on as the machine ran: set back then
                # right, the clock gives back what it took (a lag only ever clamped at nought
                # took a clock set right again for a jump ahead, and retired everything).
                lag += drift
                log.warning(
                    "the clock moved %.1f days %s while the machine ran %.1f hours: upkeep "
                    "(decay, retirement, intention expiry) counts %.1f days off it",
                    abs(drift) / 86400, "ahead" if drift > 0 else "back",
                    (ran - before.ran) / 3600, lag / 86400,
                )  # fmt: skip
        self._mark = _Mark(boot, ran, wall.timestamp(), lag)
        if before is None or before != self._mark:
            self._write(self._mark)
        return wall - dt.timedelta(seconds=lag)

    @property
    def lag(self) -> dt.timedelta:
        return dt.timedelta(seconds=self._mark.lag if self._mark else 0.0)

    def _read(self) -> _Mark | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return _Mark(str(data["boot"]), float(data["ran"]), float(data["wall"]),
                         float(data["lag"]))  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError):  # none yet, or broken: start anew
            return None

    def _write(self, mark: _Mark) -> None:
        try:
            write_atomic(self.path, json.dumps(asdict(mark)).encode(), make_dirs=False)
        except OSError as exc:  # a full disk: the lag is kept in memory until the next pass
            log.warning("could not write %s: %s", self.path, exc)
