"""Dates in text, English and Chinese: one reading for recall and for dreams. Pure, no I/O.

- :mod:`~somnid.memory.dates.words`: months, weekdays, seasons, counts (``three``, 三, 十二);
- :mod:`~somnid.memory.dates.calendar`: months, weeks, weekends, seasons and their parts as
  day ranges, and the days ``last``/``this``/``next`` point to;
- :mod:`~somnid.memory.dates.patterns`: where dates are in text, finest phrase first;
- :mod:`~somnid.memory.dates.ranges`: dates that span (days, months, years to others) and
  the years a year-less date is read in;
- :mod:`~somnid.memory.dates.reading`: each date as a :class:`Span` of day ranges against
  the day it was said (recall reads queries and memories with it), the direction of a
  weekday said bare, reference points (``as of``, 截至);
- :mod:`~somnid.memory.dates.values`: relative dates written out (a dream's ``yesterday
  (2023-10-03)``), in forms the reading reads back as the same days.
"""

from somnid.memory.dates.ranges import ANY_YEAR
from somnid.memory.dates.reading import (
    Span,
    find_dates,
    is_reference,
    reference_stretch,
)
from somnid.memory.dates.values import Resolved, absolutise, resolve

__all__ = [
    "ANY_YEAR",
    "Resolved",
    "Span",
    "absolutise",
    "find_dates",
    "is_reference",
    "reference_stretch",
    "resolve",
]
