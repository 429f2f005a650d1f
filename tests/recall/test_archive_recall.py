"""Recall across memories and the conversation archive: a line a dream left out is still
found, after a memory that says the same, with its log, speaker and time; a setting turns
it off. Lines are ranked by the query terms they hold, weighed by their idf (no model needed)."""

from __future__ import annotations

import asyncio
import datetime as dt
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.recall.dates import memory_dates, query_time
from somnid.recall.text import query_terms
from somnid.runtime import Runtime
from somnid.services.archive_recall import ArchiveText, rank_lines, term_weights
from somnid.sessions.records import Message
from somnid.sessions.transcript import Turn, log_turns
from somnid.tools.memory_tools import ToolContext
from tests.clients import app_client

SAID = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)
LINES = [
    Message("user", "My sister Lena moved to Porto last spring.", speaker="Ann"),
    Message("agent", "Porto is lovely; does she like the river walks?"),
    Message("user", "The gateway certificate expires on the 14th, remind me."),
]


def settings_for(tmp_path: Path, **recall: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={"enabled": False},
        recall=recall,
    )


async def archive_a_session(rt: Runtime) -> str:
    """Say the lines, close the log and archive it as a dream would once it is processed."""
    await rt.sessions.append_messages("s1", LINES)
    await rt.sessions.close("s1")
    [pending] = await rt.sessions.pending_logs()
    await rt.sessions.mark_processed(pending.path)
    return pending.path.stem


async def test_an_archived_line_is_found_after_the_memory_that_says_the_same(
    tmp_path: Path,
) -> None:
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        stem = await archive_a_session(rt)
        await rt.memories.create(
            Kind.KNOWLEDGE, "lena-porto", description="Ann's sister Lena lives in Porto",
            body="Lena, Ann's sister, moved to Porto.",
        )  # fmt: skip
        tool = await rt.tools.call(
            "recall_memories", {"query": "Where did Ann's sister Lena move?"}, ToolContext("s2")
        )
        # Only the archive holds the certificate: the dream left it out.
        alone = await rt.tools.call(
            "recall_memories", {"query": "gateway certificate expires"}, ToolContext("s3")
        )
    text = tool.text
    assert "lena-porto" in text and f"log {stem}" in text
    assert text.index("lena-porto") < text.index(f"log {stem}")  # the memory first
    assert 'user ("Ann")' in text and "2026-10-03 12:00" in text  # who (quoted) and when
    assert "gateway certificate expires on the 14th" in alone.text and not alone.is_error


async def test_the_route_returns_lines_and_the_setting_turns_them_off(tmp_path: Path) -> None:
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await archive_a_session(rt)
    for archive, expected in ((True, 1), (False, 0)):
        settings = settings_for(tmp_path, archive=archive)
        with app_client(create_app(settings, clock=clock), settings) as client:
            body = client.post("/v1/recall", json={"query": "gateway certificate"}).json()
        assert len(body["lines"]) == expected, body
        if expected:
            [line] = body["lines"]
            assert line["role"] == "user" and line["speaker"] is None
            assert line["time"].startswith("2026-10-03T12:00")
            assert "gateway certificate" in line["text"] and line["log"].startswith("2026-10-03")
            assert "conversation archive" in body["markdown"]
            # A search for intentions or skills alone wants no conversation (a probe).
            for kinds, lines in ((["intention"], 0), (["skill"], 0), (["episode"], 1)):
                asked = {"query": "gateway certificate", "kinds": kinds}
                with app_client(create_app(settings, clock=clock), settings) as client:
                    body = client.post("/v1/recall", json=asked).json()
                assert len(body["lines"]) == lines, (kinds, body)


async def test_a_rare_word_outweighs_one_every_other_line_holds(tmp_path: Path) -> None:
    """Lines are weighed by the idf of the terms they hold, not by how many: "passport
    renewal" and "renewal parser" each hold two of the three terms, but "parser" is in
    nearly every line and "passport" in one. (Counting terms, the newer line came first.)
    Not "today": a relative day is no keyword (it names another day in every line)."""
    lines = [
        Message("user", "The passport renewal letter came in the post."),
        *(Message("user", f"I fixed bug {n} in the parser.") for n in range(6)),
        Message("user", "The gym renewal is due, says the parser."),
    ]
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await rt.sessions.append_messages("s1", lines)
        await rt.sessions.close("s1")
        [pending] = await rt.sessions.pending_logs()
        await rt.sessions.mark_processed(pending.path)
        clock.advance(dt.timedelta(days=30))
        recalled = await rt.recaller.find("passport renewal parser", lines=5)
    texts = [line.text for line in recalled.lines]
    assert texts[:3] == [
        "The passport renewal letter came in the post.",  # 1.79 + 1.28 of 3.25
        "The gym renewal is due, says the parser.",  # 1.28 + 0.18
        "I fixed bug 5 in the parser.",  # 0.18, the newest of equals
    ], texts
    assert len(texts) == 5  # as many as asked for, each holding a term
    assert abs(recalled.lines[0].score - 0.944) < 0.001  # its share of the query's weight


def each_line_alone(query: str, turns: list[Turn], limit: int) -> list[tuple[str, float]]:
    """The ranking read off each line on its own: the reference for the joined text."""
    terms = query_terms(query)
    held = [[term in turn.text.casefold() for term in terms] for turn in turns]
    idf = term_weights([sum(row[t] for row in held) for t in range(len(terms))], len(turns))
    share = [sum(w for w, has in zip(idf, row, strict=True) if has) / sum(idf) for row in held]
    ranked = sorted((i for i, s in enumerate(share) if s), key=lambda i: (-share[i], -i))
    return [(turns[i].text, round(share[i], 4)) for i in ranked[:limit]]


def test_the_joined_archive_ranks_as_each_line_read_alone() -> None:
    """One scan of the joined, casefolded lines finds what testing each line finds: at the
    first and last line, twice in a line (counted once), across a case fold that changes a
    line's length ("Straße" → "strasse"), in a line holding the separator, after characters
    of two, three and four bytes (and a lone surrogate), and nowhere."""
    texts = [
        "fluss at the start",
        "Die Straße am Fluss",
        "a\0fluss held after a NUL",
        "",
        "FLUSS fluss fluss, three times",
        "the river",
        "ends with fluss",
        "🧘 yoga by the Fluss",
        "我们的中文课在河边",
        "a lone \udcff surrogate by the fluss",
    ]
    turns = [Turn("user", None, None, text, log="2026-10-03_001") for text in texts]
    archive = ArchiveText(turns)
    queries = ("fluss river", "Strasse am Fluss", "three times", "held NUL", "中文课", "yoga zzz")
    for query in queries:
        for limit in (1, 3, 10):
            ranked = [(line.text, line.score) for line in rank_lines(query, archive, limit)]
            assert ranked == each_line_alone(query, turns, limit), (query, limit)
    assert archive.holding("fluss") == [0, 1, 2, 4, 6, 7, 9]
    assert archive.holding("中文") == [8]


async def test_a_line_archived_after_a_recall_is_found(tmp_path: Path) -> None:
    """The joined text is kept between recalls and made again when the archive changes."""
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await archive_a_session(rt)
        before = await rt.recaller.find("quarterly tax return", lines=5)
        made = rt.recaller._archive_text
        await rt.recaller.find("gateway certificate", lines=5)
        assert made is not None and rt.recaller._archive_text is made  # kept: no change
        await rt.sessions.append_messages(
            "s2", [Message("user", "I filed the quarterly tax return on Monday.")]
        )
        await rt.sessions.close("s2")
        [pending] = await rt.sessions.pending_logs()
        await rt.sessions.mark_processed(pending.path)
        after = await rt.recaller.find("quarterly tax return", lines=5)
    assert before.lines == []
    assert [line.text for line in after.lines] == ["I filed the quarterly tax return on Monday."]
    assert rt.recaller._archive_text is not made  # made again: the archive changed


async def test_a_session_marked_never_to_be_dreamed_stays_out_of_the_archive_recall(
    tmp_path: Path,
) -> None:
    """ "Never dream this" keeps a session out of long-term memory: its archived lines are
    not recalled either (a dream-archived log, and a log a person marked by hand)."""
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await archive_a_session(rt)
        said = [Message("user", "The quarterly tax return went to Dr Kowalski on Monday.")]
        await rt.sessions.append_messages("private", said)
        await rt.sessions.mark_no_dream("private")
        await rt.sessions.close("private")
        [pending] = await rt.sessions.pending_logs()
        assert not pending.dream
        await rt.sessions.mark_processed(pending.path, skipped=True)
        skipped = await rt.recaller.find("quarterly tax return Kowalski", lines=5)
        kept = await rt.recaller.find("gateway certificate expires", lines=5)
        # By hand: a processed log whose front-matter says `dream: no`.
        [archived] = [
            p for p in rt.layout.session_log_archive.iterdir() if p.stem != pending.path.stem
        ]
        text = archived.read_text(encoding="utf-8")
        archived.write_text(text.replace("---\n", "---\ndream: no\n", 1), encoding="utf-8")
        by_hand = await rt.recaller.find("gateway certificate expires", lines=5)
    assert skipped.lines == []
    assert [line.text for line in kept.lines][:1] == [LINES[2].text]
    assert by_hand.lines == []


async def test_a_line_about_the_day_the_query_names_comes_first(tmp_path: Path) -> None:
    """A line said the day after the one asked about, that calls it "yesterday", shares no
    word with the question; it comes before a line that shares a common one. Read in
    Chinese too; a line said a month away from the day is not lifted."""
    clock = ManualClock(dt.datetime(2026, 6, 8, 9, 0, tzinfo=dt.UTC))
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        said = [
            (dt.datetime(2026, 5, 8, 9, 0), "Went to the market on a sunny morning."),
            (dt.datetime(2026, 6, 8, 9, 0), "Yesterday I went to the fish market."),
            (dt.datetime(2026, 6, 8, 9, 5), "昨天去了菜市场，花了一下午。"),
            (dt.datetime(2026, 6, 20, 9, 0), "I need to go to the bank before Friday."),
        ]
        for n, (when, text) in enumerate(said):
            at = when.replace(tzinfo=dt.UTC)
            await rt.sessions.append_messages(f"s{n}", [Message("user", text, timestamp=at)])
            await rt.sessions.close(f"s{n}")
        for pending in await rt.sessions.pending_logs():
            await rt.sessions.mark_processed(pending.path)
        clock.set(dt.datetime(2026, 7, 1, 9, 0, tzinfo=dt.UTC))
        english = await rt.recaller.find("Where did I go on June 7?", lines=4)
        chinese = await rt.recaller.find("我6月7日去了哪里？", lines=4)
    ranked = [line.text for line in english.lines]
    about_june_7 = {"Yesterday I went to the fish market.", "昨天去了菜市场，花了一下午。"}
    assert set(ranked[:2]) == about_june_7, ranked  # no word of the question
    assert ranked[2] == "I need to go to the bank before Friday.", ranked  # "go", another day
    assert "Went to the market on a sunny morning." not in ranked  # a month before: no
    assert {line.text for line in chinese.lines} == about_june_7, chinese.lines


def test_the_day_a_line_was_said_is_read_in_the_configured_zone() -> None:
    """Said at 23:30 UTC on June 7 is June 8 in Shanghai, where "yesterday" means June 7."""
    said = dt.datetime(2026, 6, 7, 23, 30, tzinfo=dt.UTC)
    turns = [Turn("user", None, said, "Yesterday we hiked.", log="2026-06-08_001")]
    june = {day: dt.date(2026, 6, day).toordinal() for day in (6, 7, 8)}
    local = ArchiveText(turns, ZoneInfo("Asia/Shanghai"))
    assert local.own_day(0) == [(june[8], june[8])]
    assert (
        local.said_on(june[8], june[8]) == [(june[8], 0)] and local.said_on(june[7], june[7]) == []
    )
    assert local.spoken(0) == [(june[7], june[7])]
    assert ArchiveText(turns).spoken(0) == [(june[6], june[6])]  # as written: UTC


async def test_the_archive_reads_again_only_the_files_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A year of logs is read once: a new archived log reads that log alone, and a log
    edited by hand is read again."""
    read: list[str] = []

    def counting(path: Path, *args: Any, **kwargs: Any) -> list[Turn]:
        read.append(path.stem)
        return log_turns(path, *args, **kwargs)

    monkeypatch.setattr("somnid.sessions.service.log_turns", counting)
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        first = await archive_a_session(rt)
        before = await rt.sessions.archived_lines()
        assert read == [first]
        assert await rt.sessions.archived_lines() is before  # nothing changed: not read
        read.clear()
        await rt.sessions.append_messages("s2", [Message("user", "The boiler was serviced.")])
        await rt.sessions.close("s2")
        [pending] = await rt.sessions.pending_logs()
        await rt.sessions.mark_processed(pending.path)
        after = await rt.sessions.archived_lines()
        assert read == [pending.path.stem]
        assert [t.text for t in after] == [*(t.text for t in before), "The boiler was serviced."]
        read.clear()
        [edited] = [p for p in rt.settings.data_dir.rglob(f"{first}.md")]
        edited.write_text(edited.read_text().replace("Porto", "Lisbon"))
        again = await rt.sessions.archived_lines()
    assert read == [first]
    assert "My sister Lena moved to Lisbon last spring." in [t.text for t in again]


async def test_the_archive_is_read_at_start_not_by_the_first_recall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A probe: the first recall after a start read every archived log (seconds for a
    year of them) while the agent waited; the start reads them in the background."""
    clock = ManualClock(SAID)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        stem = await archive_a_session(rt)
    read: list[str] = []

    def counting(path: Path, *args: Any, **kwargs: Any) -> list[Turn]:
        read.append(path.stem)
        return log_turns(path, *args, **kwargs)

    monkeypatch.setattr("somnid.sessions.service.log_turns", counting)
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await asyncio.wait_for(rt.recaller.archive_read(), 120)  # no recall asked for it
        assert read == [stem]
        found = await rt.recaller.find("Porto", lines=3)
        assert read == [stem]  # the recall read nothing more
    assert any("Lena moved to Porto" in line.text for line in found.lines)


def test_dates_read_from_a_line_are_kept_while_it_is_in_the_archive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dream archives more logs: the lines read before are not read again; a line read
    again from its file (scrubbed, edited) is a new line, and its dates are read anew."""
    read: list[str] = []

    def counting(text: str, day: dt.date | None) -> list[tuple[int, int]]:
        read.append(text)
        return memory_dates(text, day)

    monkeypatch.setattr("somnid.services.archive_recall.memory_dates", counting)
    said = dt.datetime(2026, 6, 8, 9, 0, tzinfo=dt.UTC)
    question, today = "What did we do on June 7?", dt.date(2026, 7, 1)
    hiked = Turn("user", None, said, "Yesterday we hiked.", log="2026-06-08_001")
    first = ArchiveText([hiked])
    rank_lines(question, first, 5, query_time(question, today))
    baked = Turn("user", None, said, "Yesterday I baked bread.", log="2026-06-08_002")
    second = ArchiveText([hiked, baked], before=first)
    ranked = rank_lines(question, second, 5, query_time(question, today))
    assert read == ["Yesterday we hiked.", "Yesterday I baked bread."]
    assert {line.text for line in ranked} == {"Yesterday we hiked.", "Yesterday I baked bread."}
    again = Turn("user", None, said, "Yesterday we hiked.", log="2026-06-08_001")
    rank_lines(question, ArchiveText([again, baked], before=second), 5, query_time(question, today))
    assert read[2:] == ["Yesterday we hiked."]


JULY_1 = dt.date(2026, 7, 1)


def a_dense_june(extra: list[Turn]) -> ArchiveText:
    """300 lines a day through June 2026, none saying a day or a query word, and ``extra``."""
    filler = [
        Turn("user", None, dt.datetime(2026, 6, day, 8, n % 60, tzinfo=dt.UTC), "Sure.", log="f")
        for day in range(1, 31)
        for n in range(300)
    ]
    return ArchiveText(sorted([*filler, *extra], key=lambda t: t.timestamp or SAID))


def test_the_lines_nearest_the_day_are_read_first() -> None:
    """With more lines around June 7 than are read (2,000 of ~5,100), the line said the day
    after that calls it "yesterday" is read and lifted, not the newest ones."""
    said = dt.datetime(2026, 6, 8, 20, 0, tzinfo=dt.UTC)
    market = Turn("user", None, said, "Yesterday I went to the fish market.", log="m")
    question = "Where was I on June 7?"
    ranked = rank_lines(question, a_dense_june([market]), 3, query_time(question, JULY_1))
    assert ranked[0].text == market.text, ranked


def test_lines_merely_said_in_the_period_do_not_crowd_out_the_answer() -> None:
    """Being said on the day (or in the year) lifts a line only when it holds a query word
    or speaks of a day itself: 9,000 lines said in June with neither are not listed."""
    said = dt.datetime(2026, 6, 8, 20, 0, tzinfo=dt.UTC)
    market = Turn("user", None, said, "Yesterday I bought fish at the market.", log="m")
    archive = a_dense_june([market])
    today = dt.date(2026, 7, 1)
    for question in ("fish market June 7", "What fish did I buy in 2026?", "fish in June"):
        ranked = rank_lines(question, archive, 5, query_time(question, today))
        assert [line.text for line in ranked] == [market.text], (question, ranked)


def said_on(day: dt.date, text: str) -> Turn:
    return Turn("user", None, dt.datetime.combine(day, dt.time(9), dt.UTC), text, log=f"{day}")


def test_a_line_outside_the_period_a_question_bounds_ranks_lower() -> None:
    """ "in May 2026" bounds the lines as it bounds memories (``recall.time_bound``): a line
    said in July that holds every word of the question loses half its score, unless its
    words speak of May; with no bound it ranks first."""
    question = "What bike did I buy in May 2026?"
    got = said_on(dt.date(2026, 5, 20), "Got myself a bike.")
    plan = said_on(dt.date(2026, 7, 2), "I will buy a new bike next week.")
    back = said_on(dt.date(2026, 7, 3), "Back in May I had to buy a bike for work.")
    archive = ArchiveText([got, plan, back])
    when = query_time(question, JULY_1)
    bounded = [line.text for line in rank_lines(question, archive, 3, when, 0.5)]
    assert bounded == [back.text, got.text, plan.text]
    unbounded = [line.text for line in rank_lines(question, archive, 3, when, 0.0)]
    assert unbounded[:2] == [back.text, plan.text]  # newer first among equals


async def test_a_line_said_after_the_reference_point_ranks_lower(tmp_path: Path) -> None:
    """ "As of June 2026" asks what was true then: a line said in August ranks below one
    said in May that holds the same words, through recall as the agent calls it; with
    ``recall.time_bound`` 0 the newer line comes first."""
    lines = [
        (dt.date(2026, 5, 10), "I work at the bakery on Elm Street now."),
        (dt.date(2026, 8, 10), "I quit and work at the bookshop on Elm Street now."),
    ]
    question = "As of June 2026, where did I work on Elm Street?"
    ranked = {}
    for bound in (0.5, 0.0):
        clock = ManualClock(SAID)
        async with Runtime.open(
            settings_for(tmp_path / str(bound), time_bound=bound), clock=clock
        ) as rt:
            for n, (day, text) in enumerate(lines):
                at = dt.datetime.combine(day, dt.time(9), dt.UTC)
                await rt.sessions.append_messages(f"s{n}", [Message("user", text, timestamp=at)])
                await rt.sessions.close(f"s{n}")
            for pending in await rt.sessions.pending_logs():
                await rt.sessions.mark_processed(pending.path)
            clock.set(dt.datetime(2026, 9, 1, 9, 0, tzinfo=dt.UTC))
            recalled = await rt.recaller.find(question, lines=2)
            ranked[bound] = [line.text for line in recalled.lines]
            assert recalled.time == "as of 2026-06-30", recalled.time
            # no episode to find (none stored): the lines still are; a search that leaves
            # episodes out (profiles, not indexed) wants none
            alone = await rt.recaller.find(question, kinds=(Kind.EPISODE,), lines=2)
            assert [line.text for line in alone.lines] == ranked[bound]
            none = await rt.recaller.find(question, kinds=(Kind.PROFILE,), lines=2)
            assert none.lines == []
    assert ranked[0.5] == [lines[0][1], lines[1][1]]
    assert ranked[0.0] == [lines[1][1], lines[0][1]]


def test_newer_lines_after_the_reference_point_do_not_keep_the_top() -> None:
    """Sixty lines said after "as of June 2026" hold the same words as the one said before
    it, and among equals the newer come first: every one is checked until the five best
    are known, so the May line leads."""
    may = said_on(dt.date(2026, 5, 10), "I work at the bakery.")
    later = [
        said_on(dt.date(2026, 8, 1) + dt.timedelta(days=n), f"I work at shop {n}.")
        for n in range(60)
    ]
    filler = [said_on(dt.date(2026, 4, 1), f"Sure, {n}.") for n in range(500)]
    archive = ArchiveText([*filler, may, *later])
    question = "As of June 2026, where did I work?"
    ranked = rank_lines(question, archive, 5, query_time(question, dt.date(2026, 10, 1)), 0.5)
    assert ranked[0].text == may.text, ranked
    assert {line.text for line in ranked[1:]} <= {line.text for line in later}


async def test_an_archived_lines_time_is_shown_in_the_configured_zone(tmp_path: Path) -> None:
    # A probe: recall showed the log's own offset (a line said at 12:00 UTC under UTC+14 was
    # on 2026-10-03 there, 2026-10-04 in search_recent_conversation: another day).
    async with Runtime.open(settings_for(tmp_path), clock=ManualClock(SAID)) as rt:
        await archive_a_session(rt)  # written in UTC, then read where it is UTC+14
    zone = ZoneInfo("Pacific/Kiritimati")
    settings = settings_for(tmp_path).model_copy(update={"timezone": "Pacific/Kiritimati"})
    async with Runtime.open(settings, clock=ManualClock(SAID.astimezone(zone))) as rt:
        tool = await rt.tools.call(
            "recall_memories", {"query": "gateway certificate expires"}, ToolContext("s3")
        )
    assert "2026-10-04 02:00" in tool.text and "2026-10-03 12:00" not in tool.text
