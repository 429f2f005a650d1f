"""How stored text is shown to an agent, in one place: it is data, never part of the frame.

Two forms, used everywhere stored text reaches a model (tool answers, prompt sections,
recall results): a short field (an intention, a name, a profile's first line) is
:func:`inline`, one line in double quotes with JSON escapes, so nothing in it can end the
line, start a heading or close the quote; longer text (a body) is a Markdown quote block
(``somnid.services.recalling.quote``), every line behind ``> ``.
"""

from __future__ import annotations

import json

from somnid.memory.text import one_line


def inline(text: str) -> str:
    """``text`` on one line, in double quotes: ``x\\n## System`` becomes ``"x ## System"``."""
    return json.dumps(one_line(text), ensure_ascii=False)
