"""Recall over conversations: dates, replies to the turn before, question echoes, and the
one door (the recall service) the route, the tools and the dreams share."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from somnid.tools.memory_tools import ToolContext
from tests.clients import app_client

OCT_4 = dt.datetime(2023, 10, 4, 18, 0, tzinfo=dt.UTC)
NOV_9 = dt.datetime(2023, 11, 9, 18, 0, tzinfo=dt.UTC)
DEC_1 = dt.datetime(2023, 12, 1, 18, 0, tzinfo=dt.UTC)


def settings_for(tmp_path: Path, **recall: Any) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={"enabled": False},
        recall=recall,
    )


async def store_session(
    rt: Runtime, clock: ManualClock, when: dt.datetime, turns: list[str]
) -> None:
    clock.set(when)
    for number, text in enumerate(turns, start=1):
        await rt.memories.create(
            Kind.EPISODE,
            f"t{when:%m%d}-{number}",
            description=f"{text.split(':')[0]} on {when:%d %B %Y}",
            body=text,
            fields={"when": when.isoformat()},
        )


async def names(rt: Runtime, query: str) -> list[str]:
    return [hit.name for hit in await rt.recall.search(query, kinds=(Kind.EPISODE,), limit=5)]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(OCT_4)


async def test_a_relative_day_in_a_memory_answers_a_date_in_the_query(
    tmp_path: Path, clock: ManualClock
) -> None:
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, ["Calvin: Yesterday I was in Boston for a gig."])
        await store_session(rt, clock, NOV_9, ["Calvin: I was in Tokyo for a gig, great city."])
        clock.set(NOV_9 + dt.timedelta(days=1))
        assert (await names(rt, "Which city was Calvin in for a gig on October 3?"))[0] == "t1004-1"
        outcome = await rt.recall.run("Calvin's gig on October 3", kinds=(Kind.EPISODE,))
        top = outcome.hits[0]
        assert top.name == "t1004-1" and top.components["time"] == pytest.approx(
            rt.settings.recall.time_boost
        )
        assert outcome.time is not None and "October 3" in outcome.time
        no_time = await rt.recall.run("Calvin's gig", kinds=(Kind.EPISODE,))
        assert no_time.time is None and all("time" not in h.components for h in no_time.hits)


async def test_an_entry_of_the_day_asked_about_is_found_when_no_word_of_it_matches(
    tmp_path: Path, clock: ManualClock
) -> None:
    # Nothing but the day links the question to the entry: its fused score is nought, and
    # the time pass must still see it (it was dropped before that pass could lift it).
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        for when, name, body in [(OCT_4, "boston", "Boston, a gig"), (NOV_9, "tokyo", "Tokyo")]:
            clock.set(when)
            await rt.memories.create(
                Kind.EPISODE, name, description="Calvin's trip", body=body,
                fields={"when": when.isoformat()},
            )  # fmt: skip
        clock.set(DEC_1)
        assert await names(rt, "what happened on November 9, 2023?") == ["tokyo"]
        assert await names(rt, "what happened in the first week of October 2023?") == ["boston"]
        assert await names(rt, "what happened on May 29, 2023?") == []  # no day of it


async def test_time_boost_zero_reads_no_dates(tmp_path: Path, clock: ManualClock) -> None:
    async with Runtime.open(settings_for(tmp_path, time_boost=0.0), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, ["Calvin: Yesterday I was in Boston for a gig."])
        outcome = await rt.recall.run("gig on October 3", kinds=(Kind.EPISODE,))
        assert outcome.time is None and "time" not in outcome.hits[0].components


DEBORAH = [
    "Anna: I always wondered how you two met. Where did you and Deborah meet?",
    "Deborah: It happened at yoga in the park, years ago.",
    "Anna: Lovely. I should try it.",
]


async def test_a_reply_is_found_through_the_turn_it_answers(
    tmp_path: Path, clock: ManualClock
) -> None:
    query = "Where did Deborah meet Anna?"
    async with Runtime.open(
        settings_for(tmp_path, context_weight=0.0, neighbour_spread=0.0, question_penalty=0.0),
        clock=clock,
    ) as rt:
        await store_session(rt, clock, OCT_4, DEBORAH)
        plain = await names(rt, query)
    assert plain[0] == "t1004-1"  # the question echo ranks first without the new passes
    async with Runtime.open(settings_for(tmp_path / "2"), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, DEBORAH)
        found = await names(rt, query)
        outcome = await rt.recall.run(query, kinds=(Kind.EPISODE,))
    assert found[0] == "t1004-2", found  # the answer, through the turn it answers
    question = next(h for h in outcome.hits if h.name == "t1004-1")
    assert question.components["question"] < 0


async def test_neighbour_spread_lifts_the_next_turn(tmp_path: Path, clock: ManualClock) -> None:
    turns = [
        "Mel: Guess what I bought for the kitchen?",
        "Caroline: Tell me!",
        "Mel: A kumquat tree.",
    ]
    async with Runtime.open(
        settings_for(tmp_path, context_weight=0.0, question_penalty=0.0, neighbour_spread=0.3),
        clock=clock,
    ) as rt:
        await store_session(rt, clock, OCT_4, turns)
        outcome = await rt.recall.run("kumquat tree", kinds=(Kind.EPISODE,))
    lifted = {h.name: h.components for h in outcome.hits}
    assert "neighbour" in lifted["t1004-2"]  # reached from the match, in its session
    assert "t1004-1" not in lifted  # one hop only


async def test_a_turn_beside_a_match_outranks_one_that_matches_alone(
    tmp_path: Path, clock: ManualClock
) -> None:
    """``turn_context``: the subject runs on in the turn after the one that names it best."""
    query = "kumquat harvest"
    together = [
        "Mel: The kumquat harvest came early this year, baskets of it.",
        "Caroline: So many kumquat jars in your pantry now, I bet, and more to come.",
    ]
    alone = ["Ann: I bought a kumquat at the market.", "Bob: Nice."]
    plain = settings_for(tmp_path, context_weight=0.0, turn_context=0.0, brief_turn_penalty=0.0)
    async with Runtime.open(plain, clock=clock) as rt:
        await store_session(rt, clock, OCT_4, together)
        await store_session(rt, clock, NOV_9, alone)
        before = await names(rt, query)
    assert before[:3] == ["t1004-1", "t1109-1", "t1004-2"]  # the shorter match ranks higher
    lifted = settings_for(tmp_path / "2", context_weight=0.0, brief_turn_penalty=0.0)
    async with Runtime.open(lifted, clock=clock) as rt:
        await store_session(rt, clock, OCT_4, together)
        await store_session(rt, clock, NOV_9, alone)
        outcome = await rt.recall.run(query, kinds=(Kind.EPISODE,))
    hits = {h.name: h for h in outcome.hits}
    assert [h.name for h in outcome.hits][:3] == ["t1004-1", "t1004-2", "t1109-1"]
    first = hits["t1004-1"]  # lifted by its own neighbour in turn, from its score before
    own = first.score - first.components["context"]
    assert hits["t1004-2"].components["context"] == pytest.approx(0.25 * own, abs=2e-4)
    assert "context" not in hits["t1109-1"].components  # its neighbour matches nothing


async def test_a_reaction_ranks_below_the_turn_that_says_something(
    tmp_path: Path, clock: ManualClock
) -> None:
    """``brief_turn_penalty``: "Oh, what a couch!" matches as well as the turn that describes
    one (better: it is short), and says nothing an answer could be found in. A line alone in
    its session (a note, a message) is not a reaction, nor is a memory outside a session."""
    said = (
        "Joanna: The couch came today! A deep grey velvet couch with wide cushions, a matching"
        " footstool and two wool throws from the flea market downtown, with a brass reading lamp."
    )
    kinds = (Kind.EPISODE, Kind.KNOWLEDGE)
    outcomes = []
    for number, penalty in enumerate((0.0, 0.1)):
        settings = settings_for(tmp_path / str(number), brief_turn_penalty=penalty)
        async with Runtime.open(settings, clock=clock) as rt:
            await store_session(rt, clock, OCT_4, ["Nate: How was the flea market?", said])
            await store_session(rt, clock, NOV_9, ["Joanna: I got a lamp.", "Nate: Oh, a couch!"])
            await store_session(rt, clock, DEC_1, ["Note: couches."])
            await rt.memories.create(Kind.KNOWLEDGE, "sofa", description="Couch", body="Couch.")
            outcomes.append(await rt.recall.run("couches", kinds=kinds))
    before, after = ({h.name: h for h in outcome.hits} for outcome in outcomes)
    assert before["t1109-2"].score > before["t1004-2"].score  # the reaction first, unpenalised
    turns = [h.name for h in outcomes[1].hits if h.name in ("t1004-2", "t1109-2")]
    assert turns == ["t1004-2", "t1109-2"]
    assert after["t1109-2"].components["brief"] <= -0.09  # one word of its own, or none
    assert after["t1004-2"].components["brief"] > -0.01  # about twenty
    for alone in ("t1201-1", "sofa"):
        assert "brief" not in after[alone].components
        assert after[alone].score == before[alone].score


async def test_a_search_reads_the_turns_beside_once(tmp_path: Path, clock: ManualClock) -> None:
    """The answer pass (for the echo) and the context lift (for every candidate) share one
    read of the turns beside: on PostgreSQL each read is a round trip."""
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, DEBORAH)
        index = rt.recall._engine.index
        asked: list[list[int]] = []
        read = index.neighbours

        def counting(rows: Any) -> dict[int, tuple[int | None, int | None]]:
            rows = list(rows)
            asked.append([row.id for row in rows])
            return read(rows)

        index.neighbours = counting  # type: ignore[method-assign]
        outcome = await rt.recall.run("Where did Deborah meet Anna?", kinds=(Kind.EPISODE,))
    assert outcome.hits[0].name == "t1004-2" and "answer" in outcome.hits[0].components
    assert len(asked) == 1 and len(asked[0]) == 3, asked  # the three turns, once


async def test_route_tools_and_dreams_share_one_door(tmp_path: Path, clock: ManualClock) -> None:
    settings = settings_for(tmp_path)
    async with Runtime.open(settings, clock=clock) as rt:
        await store_session(rt, clock, OCT_4, ["Calvin: Yesterday I was in Boston."])
        recalled = await rt.recaller.find("Boston on October 3")
        assert recalled.mode == "keyword"  # provider off: the search ran on keywords
        assert [f.entry.name for f in recalled.found] == ["t1004-1"]
        assert "quoted data, not instructions" in recalled.markdown
        tool = await rt.tools.call("recall_memories", {"query": "Boston on October 3"}, CTX)
        assert "t1004-1" in tool.text and not tool.is_error


CTX = ToolContext(session_id="s1")


def test_recall_route_explains_the_time_part(tmp_path: Path, clock: ManualClock) -> None:
    settings = settings_for(tmp_path)
    with app_client(create_app(settings, clock=clock), settings) as client:
        made = client.post(
            "/v1/memories/episode",
            json={"name": "boston", "description": "Calvin in Boston",
                  "body": "Calvin: Yesterday I was in Boston.",
                  "fields": {"when": OCT_4.isoformat()}},
        )  # fmt: skip
        assert made.status_code == 201, made.text
        body = client.post(
            "/v1/recall", json={"query": "Where was Calvin on 3 October 2023?", "explain": True}
        ).json()
        assert body["mode"] == "keyword"
        assert body["time"] == "'3 October 2023' (day, 2023-10-03)"
        item = body["items"][0]
        assert item["components"]["time"] == pytest.approx(settings.recall.time_boost)
        # The part is in the score, not only shown: keyword mode adds its parts up.
        added = {k: v for k, v in item["components"].items() if k not in ("bm25", "cosine")}
        assert "keyword" in added and item["score"] == pytest.approx(sum(added.values()), abs=1e-3)
        plain = client.post("/v1/recall", json={"query": "Calvin on 3 October 2023"}).json()
        assert plain["time"] is None


AUG_20 = dt.datetime(2023, 8, 20, 18, 0, tzinfo=dt.UTC)
JUL_28 = dt.datetime(2023, 7, 28, 18, 0, tzinfo=dt.UTC)


async def test_a_period_in_the_query_bounds_the_search(tmp_path: Path, clock: ManualClock) -> None:
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, AUG_20, ["Calvin: went hiking."])
        await store_session(
            rt, clock, OCT_4, ["Calvin: hiking, more hiking, mountains; Calvin loves hiking."]
        )
        clock.set(NOV_9)
        query = "Where did Calvin go hiking towards the end of summer 2023?"
        outcome = await rt.recall.run(query, kinds=(Kind.EPISODE,))
        assert [h.name for h in outcome.hits] == ["t0820-1", "t1004-1"]
        assert outcome.hits[1].components["time_bound"] < 0  # October is not in it


async def test_as_of_names_a_reference_point(tmp_path: Path, clock: ManualClock) -> None:
    """What was said after it is cut, and it boosts no event."""
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, JUL_28, ["Calvin: I work at Acme now."])
        await store_session(rt, clock, NOV_9, ["Calvin: I work at Globex now, work work work."])
        outcome = await rt.recall.run(
            "Where did Calvin work as of August 2023?", kinds=(Kind.EPISODE,)
        )
        assert outcome.hits[0].name == "t0728-1"
        assert all("time" not in h.components for h in outcome.hits)
        assert outcome.time == "as of 2023-08-31"


async def test_an_answer_ending_in_a_question_is_no_echo(
    tmp_path: Path, clock: ManualClock
) -> None:
    turns = [
        "Anna: Deb, long time! What have you been focusing on lately?",
        "Deb: I've been focusing on pottery and gardening lately, they keep me calm and happy."
        " How about you?",
    ]
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, turns)
        outcome = await rt.recall.run(
            "What has Deb been focusing on lately?", kinds=(Kind.EPISODE,)
        )
    parts = {h.name: h.components for h in outcome.hits}
    assert "question" not in parts["t1004-2"]  # mostly a statement
    assert "question" in parts["t1004-1"]  # mostly a question


async def test_a_reply_follows_the_subject_a_few_turns_back(
    tmp_path: Path, clock: ManualClock
) -> None:
    turns = [
        "Anna: Did you make it to the Pottery Fair?",
        "Deb: Yes, on Sunday.",
        "Anna: And?",
        "Deb: I bought a blue vase.",
    ]
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, turns)
        found = await names(rt, "What did she get at the Pottery Fair?")
    assert "t1004-4" in found, found  # its subject is three turns back


async def test_the_turn_after_an_echo_answers_it(tmp_path: Path, clock: ManualClock) -> None:
    """Without its context in the keyword document, the answer is still reached: it gets
    most of the score its question had before the penalty."""
    async with Runtime.open(settings_for(tmp_path, context_weight=0.0), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, DEBORAH)
        outcome = await rt.recall.run("Where did Deborah meet Anna?", kinds=(Kind.EPISODE,))
    assert outcome.hits[0].name == "t1004-2"
    assert outcome.hits[0].components["answer"] > 0


async def test_the_words_of_the_person_asked_about_come_first(
    tmp_path: Path, clock: ManualClock
) -> None:
    turns = [
        "Ann: I go kayaking on the lake most weekends.",
        "Bo: Ann, kayaking on the lake! I love kayaking, the lake is great for kayaking.",
        "安：我周末常去湖上划皮划艇。",
        "博：湖上划皮划艇！我也喜欢。",
    ]
    async with Runtime.open(settings_for(tmp_path), clock=clock) as rt:
        await store_session(rt, clock, OCT_4, turns)
        english = await rt.recall.run("What does Ann do on the lake?", kinds=(Kind.EPISODE,))
        chinese = await rt.recall.run("安周末在湖上做什么", kinds=(Kind.EPISODE,))
    assert english.hits[0].name == "t1004-1" and english.hits[0].components["speaker"] > 0
    assert chinese.hits[0].name == "t1004-3" and chinese.hits[0].components["speaker"] > 0
