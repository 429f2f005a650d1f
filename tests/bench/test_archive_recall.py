"""The archive benchmark on a conversation small enough to check by hand, with the real
(int8) model: each turn is a line, every variant runs on every question with evidence, and
the shipped ranking finds the line that holds the question's rare word ("passport", "bake")
among lines that all say "today"."""

from __future__ import annotations

import datetime as dt

from bench._locomo import Conversation, Question, Turn
from bench.archive_recall import archive_of, at_scale, locomo_cases, measure, zh_cases
from bench.zh_assistant_data import build

from somnid.embed.onnx import OnnxEmbedder

WHEN = dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
TEXTS = [
    ("Ann", "Today was long, I walked the dog today."),
    ("Bo", "Today I finally renewed my passport at the office."),
    ("Ann", "Today the weather was nice for the walk."),
    ("Bo", "I baked bread today.", "a photo of a loaf on a table"),
]


def conversation() -> Conversation:
    turns = tuple(
        Turn(f"D1:{n}", said[0], said[1], said[2] if len(said) > 2 else None, WHEN)
        for n, said in enumerate(TEXTS, start=1)
    )
    questions = (
        Question(0, "When did Bo renew his passport today?", 2, ("d1-2",)),
        Question(1, "What did Bo bake?", 4, ("d1-4",)),
        Question(2, "Who is Bo?", 5, ()),  # adversarial, no evidence: not asked
    )
    return Conversation("conv-x", ("Ann", "Bo"), turns, questions)


def test_the_archive_holds_each_turn_with_its_caption() -> None:
    turns, where = archive_of(conversation())
    assert where == {"d1-1": 0, "d1-2": 1, "d1-3": 2, "d1-4": 3}
    assert turns[3].text == "I baked bread today. [shares a photo: a photo of a loaf on a table]"
    assert turns[1].speaker == "Bo" and turns[1].timestamp == WHEN


async def test_every_variant_asks_every_question_with_evidence(
    int8_embedder: OnnxEmbedder,
) -> None:
    results, timings = await measure(locomo_cases([conversation()]), int8_embedder)
    assert set(results) == {
        "somnid",
        "somnid without the time part",
        "fused with the cosine",
        "cosine alone",
        "terms counted, cosine order",
    }
    somnid = results["somnid"]
    assert somnid["questions"] == 2 and somnid["r@5"] == 1.0
    assert set(somnid["per_category"]) == {"temporal", "single-hop"}
    assert {name: len(seconds) for name, seconds in timings.items()} == {
        "somnid": 2,
        "fused with the cosine": 2,
    }


def test_at_scale_the_shipped_ranking_picks_what_the_one_before_did() -> None:
    scale = at_scale([conversation()], size=50)
    assert scale["lines"] == 50 and scale["same_lines"] == "2/2"
    assert {name: figures["queries"] for name, figures in scale["per_query_ms"].items()} == {
        "somnid": 2,
        "terms only": 2,
        "before (per line)": 2,
    }


def test_each_chinese_user_is_an_archive_asked_their_own_questions() -> None:
    users = build(users=3)
    cases = zh_cases(users, distractors=5)
    assert len(cases) == 3
    for user, case in zip(users, cases, strict=True):
        assert len(case.turns) == len(user.messages) + 5
        times = [t.timestamp for t in case.turns if t.timestamp is not None]
        assert len(times) == len(case.turns) and times == sorted(times)
        assert len(case.questions) == len(user.questions)
        for asked, question in zip(case.questions, user.questions, strict=True):
            said = {m.key: m.text for m in user.messages}
            assert [case.turns[i].text for i in asked.evidence] == [
                said[key] for key in question.evidence
            ]
