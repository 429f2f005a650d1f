"""One line of text: the one rule for putting stored or given text on a single line.

Every place that shows a field, a name or a header on one line (quoted tool answers, prompt
sections, a dream's descriptions, git's commit headers) collapses whitespace this way, so a
newline in the text can never start a line of its own.
"""

from __future__ import annotations


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) as one space, trimmed."""
    return " ".join(text.split())
