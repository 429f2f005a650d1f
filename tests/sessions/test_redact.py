"""What a purge's scrub replaces in a session log, and what it leaves (sessions/redact.py)."""

from __future__ import annotations

import pytest

from somnid.errors import InvalidInput
from somnid.sessions.redact import MAX_PHRASES, phrases, redact_text

LOG = """---
session_id: 2026-11-01_001
user: user
status: pending
---

[user] 2026-11-01T10:00:05
my code is Tango-Nine, and the user said so
<!-- id: e:1 -->

[agent] 2026-11-01T10:00:30
\\[user] 2026-11-01T10:00:05
TANGO-NINE 2026
"""


def test_only_the_turns_text_is_replaced() -> None:
    text, count = redact_text(LOG, phrases(["- tango-nine", "user", "e:1", "status: pending"]))
    head, _, body = text.partition("\n---\n")
    assert head + "\n---\n" == LOG.partition("\n---\n")[0] + "\n---\n"  # front-matter as is
    assert "[user] 2026-11-01T10:00:05\nmy code is [REDACTED], and the [REDACTED] said so" in body
    assert "<!-- id: e:1 -->" in body  # an id line is no text
    assert "\\[[REDACTED]] 2026-11-01T10:00:05" in body  # escaped before, still escaped
    # A line the replacement made look like a header is escaped as the writer does.
    assert "\n\\[REDACTED] 2026\n" in body
    assert count == 4


def test_phrases_are_lines_without_list_markers_longest_first() -> None:
    assert phrases(["- a long line\n* abc\n1. another one here", "short\n"]) == [
        "another one here",
        "a long line",
        "short",
    ]
    with pytest.raises(InvalidInput):
        phrases([f"phrase number {n}" for n in range(MAX_PHRASES + 1)])


def test_a_phrase_s_start_before_a_cut_goes_and_no_shorter_one() -> None:
    wanted = phrases(["Straße 12 is where the key is kept"])
    cut = "result: > see Straße 12 is wh …(truncated, 900 chars)\nand My… or Str…"
    text, count = redact_text(f"[tool] 2026-11-01T10:00:05\n{cut}\n", wanted)
    assert "result: > see [REDACTED] …(truncated, 900 chars)" in text
    assert "and My… or Str…" in text  # three letters of it say nothing
    assert count == 1


def test_a_log_in_another_encoding_matches_the_phrase_s_letters_in_its_bytes() -> None:
    log = "[user] 2026-11-01T10:00:05\nCaf\udce9 talk: locker 31-07\n"  # Latin-1's é, as read
    text, count = redact_text(log, phrases(["Café talk: locker 31-07"]))
    assert (text, count) == ("[user] 2026-11-01T10:00:05\n[REDACTED]\n", 1)


def test_a_cut_start_is_the_longest_from_a_word_s_start_and_a_phrase_s_own_cut_stays_whole() -> (
    None
):
    """A review: a phrase holding a ``…`` of its own lost only its part before it; a ``…``
    after "contest" blanked "test…"; the first phrase, not the longest start, won; an ß
    elsewhere in the line turned case folding off."""
    wanted = phrases([
        "Wait… my PIN is 1234",
        "test result is positive",
        "hunter2 is my password for the bank",
        "password hunter2 is what I use everywhere",
        "my secret code is 1234",
    ])  # fmt: skip
    lines = [
        "Wait… my PIN is 1234, he said",
        "the contest… the bank…",
        "result: > password hunter2 is wh …(truncated, 900 chars)",
        "Straße: MY SECRET CODE IS 12…",
    ]
    text, count = redact_text("[user] 2026-11-01T10:00:05\n" + "\n".join(lines) + "\n", wanted)
    assert text.splitlines()[1:] == [
        "[REDACTED], he said",
        "the contest… the bank…",
        "result: > [REDACTED] …(truncated, 900 chars)",
        "Straße: [REDACTED]…",
    ]
    assert count == 3


GBK_LINE = "我的猫叫小白，它很可爱。我们住在北京的一个小公寓里，邻居家也有猫。"


def test_a_log_in_a_legacy_encoding_loses_the_phrase_and_nothing_else() -> None:
    """A review: any one to four bytes stood for a letter beyond ASCII, so purging one
    phrase blanked unrelated text of a GBK log, and cut characters in half."""
    read = GBK_LINE.encode("gbk").decode("utf-8", "surrogateescape")
    log = f"[user] 2026-11-01T10:00:05\n{read}\n"
    untouched, none = redact_text(log, phrases(["我们住在上海的大房子"]))
    assert (untouched, none) == (log, 0)
    text, count = redact_text(log, phrases(["我们住在北京的一个小公寓里"]))
    assert count == 1
    kept = text.splitlines()[1].encode("utf-8", "surrogateescape").decode("gbk", "replace")
    assert kept == "我的猫叫小白，它很可爱。[REDACTED]，邻居家也有猫。"
