"""The generated Chinese assistant set: the same from the same seed, honest distractors."""

from __future__ import annotations

import datetime as dt

from bench.zh_assistant_data import DISTRACTORS, build, distractors_for


def test_the_set_is_the_same_from_the_same_seed() -> None:
    first, second = build(), build()
    assert [m.text for u in first for m in u.messages] == [
        m.text for u in second for m in u.messages
    ]
    assert [q.text for u in first for q in u.questions] == [
        q.text for u in second for q in u.questions
    ]
    assert {q.kind for u in first for q in u.questions} == {"single", "bridge", "date", "count"}


def test_evidence_is_the_user_own_and_distractors_never_share_a_topic() -> None:
    users = build()
    for user in users:
        own = {m.key for m in user.messages}
        assert all(set(q.evidence) <= own for q in user.questions)
        extra = distractors_for(user, users, DISTRACTORS)
        assert len(extra) == DISTRACTORS
        assert not {m.about for m in extra} & user.topics
        assert not own & {m.key for m in extra}


def test_a_date_question_names_the_day_its_message_speaks_of() -> None:
    for user in build():
        by_key = {m.key: m for m in user.messages}
        for question in (q for q in user.questions if q.kind == "date"):
            message = by_key[question.evidence[0]]
            back = {"昨天": 1, "前天": 2, "三天前": 3, "今天": 0}[
                next(w for w in ("三天前", "昨天", "前天", "今天") if message.text.startswith(w))
            ]
            day = message.when.date().toordinal() - back
            named = dt.date.fromordinal(day)
            assert f"{named.month}月{named.day}日" in question.text


def test_every_asked_person_has_a_near_miss_and_questions_are_paraphrased() -> None:
    """Hard negatives (the person and the question's words, not the answer) and questions in
    other words than their message: what makes the keyword half subtract, as on MemDaily."""
    users = build()
    for user in users:
        near = [m for m in user.messages if m.about.endswith("-near")]
        evidence = {key for q in user.questions for key in q.evidence}
        assert near and not {m.key for m in near} & evidence
        about = {m.key: m.about for m in user.messages}
        near_about = {m.about for m in near}
        for question in (q for q in user.questions if q.kind == "single"):
            assert f"{about[question.evidence[0]]}-near" in near_about, question.text
    paraphrased = {"靠什么谋生", "干哪一行", "哪天出生", "离不开哪种饮品", "一碰就出问题"}
    asked = " ".join(q.text for u in users for q in u.questions)
    assert sum(phrase in asked for phrase in paraphrased) >= 4


def test_a_near_miss_shares_more_of_the_question_than_its_evidence() -> None:
    """For every single fact asked, the user's store holds a message that shares more of the
    question's bigrams than the evidence does, and answers nothing: keyword bait."""

    def bigrams(text: str) -> set[str]:
        return {text[i : i + 2] for i in range(len(text) - 1)}

    for user in build():
        text = {m.key: m.text for m in user.messages}
        near = [m.text for m in user.messages if m.about.endswith("-near")]
        for question in (q for q in user.questions if q.kind == "single"):
            asked = bigrams(question.text)
            shared = len(asked & bigrams(text[question.evidence[0]]))
            assert any(len(asked & bigrams(n)) > shared for n in near), question.text
