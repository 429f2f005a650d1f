from __future__ import annotations

import pytest

from somnid.recall.passes import penalise_brief_turns
from somnid.recall.scorer import Scored
from somnid.recall.text import (
    BIGRAM_EVIDENCE,
    cjk_bigrams,
    content_terms,
    fts_query,
    is_in,
    keyword_evidence,
    literal_forms,
    query_terms,
)


def test_cjk_runs_become_bigrams() -> None:
    assert cjk_bigrams("部署窗口 is Tue").split() == ["部署", "署窗", "窗口", "is", "Tue"]
    assert cjk_bigrams("用 venv").split() == ["用", "venv"]
    assert cjk_bigrams("no cjk here") == "no cjk here"


def test_query_terms() -> None:
    assert query_terms("When can we deploy? 部署窗口") == ["deploy", "部署", "署窗", "窗口"]
    assert query_terms("what is it") == ["what", "is", "it"]  # nothing but stop words: keep them
    assert query_terms("我的猫叫什么") == ["猫叫"]
    assert query_terms("a I x") == []  # single latin letters never score
    assert query_terms("don't DON'T") == ["don't"]


def test_content_terms_are_the_query_terms_a_text_says() -> None:
    text = "Joanna: Sure! You should get a couch, really fluffy — 部署窗口 v2"
    assert content_terms(text) == set(query_terms(text))
    # A text's dates are words it says; a query's date is read by the time pass instead.
    assert {"4", "月", "25", "日"} <= content_terms("部署窗口 4月25日")
    assert content_terms("Me too!") == set()  # stop words only: nothing said
    # A Chinese stop word (没有) is left out as query_terms leaves it out.
    said = "我室友问我工作顺不顺利，职业规划想好了没有。"
    assert content_terms(said) == set(query_terms(said)) and "没有" not in content_terms(said)


def test_a_turn_that_says_little_beyond_the_query_loses_up_to_the_penalty() -> None:
    bodies = {
        1: "nate: oh, what a couch!",
        2: "joanna: " + " ".join(f"word{n}" for n in range(25)),
        3: "小美：我们周末去了杭州西湖边的茶园采茶，还学会了怎么炒龙井，真的很有意思",
        5: "deployed v2 to prod.",  # a terse note, not a line of a dialogue
    }
    scored = [Scored(i, 1.0, 0.5, {}) for i in (1, 2, 3, 4, 5)]
    ranked = penalise_brief_turns(scored, bodies, "the couch", 0.1)
    cuts = {s.entry_id: s.components.get("brief", 0.0) for s in ranked}
    assert cuts[1] == -0.095  # one word of its own ("couch" is asked; "oh", "what" say nothing)
    assert cuts[2] == 0.0 and cuts[4] == 0.0 and cuts[5] == 0.0  # twenty words; no body; no speaker
    assert -0.05 < cuts[3] < 0.0  # a Chinese turn counts its bigrams
    assert [s.entry_id for s in ranked][-1] == 1


def test_cjk_bigrams_holding_a_function_character_are_left_out_of_queries() -> None:
    """是做, 么工, 作的 straddle the question's phrasing: a message asking the same thing
    matches them, the answer never does. English stop words, in Chinese."""
    assert query_terms("我表姐是做什么工作的？") == ["表姐", "工作"]
    assert query_terms("我家一共养了哪些宠物？") == ["共养", "宠物"]
    assert query_terms("我6月14日干嘛了？") == ["干嘛"]  # the date: the time pass's
    assert query_terms("你是谁") == ["你是", "是谁"]  # nothing else left: keep them all
    assert cjk_bigrams("我表姐是做什么工作的").split()[:3] == [
        "我表",
        "表姐",
        "姐是",
    ]  # documents keep all


def test_fts_query_quotes_everything() -> None:
    assert fts_query(['say "hi"', "OR", "NEAR"]) == '"say ""hi""" OR "OR" OR "NEAR"'


def test_keyword_evidence_is_less_for_cjk_bigrams() -> None:
    assert keyword_evidence(query_terms("laptop breaks when touched")) == 1.0
    assert keyword_evidence(query_terms("我室友对什么过敏")) == BIGRAM_EVIDENCE
    mixed = query_terms("PostgreSQL 备份")  # a word and one bigram
    assert keyword_evidence(mixed) == (1.0 + BIGRAM_EVIDENCE) / 2
    assert keyword_evidence([]) == 1.0


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("what did I fix yesterday", ["fix"]),
        ("what happened last week at the gym", ["happened", "gym"]),
        ("two weeks ago what did Mel paint", ["mel", "paint"]),
        ("where did we go last summer", ["go", "summer"]),  # a season a text may name
        ("last Friday at the park", ["friday", "park"]),
        ("去年夏天去了哪里", ["夏天"]),
        ("上周三开会说了什么", ["周三", "开会", "会说"]),  # a weekday, numeral and all
        ("我昨天修了什么", []),  # its day is all it asks by
    ],
)
def test_a_relative_day_is_no_keyword(query: str, terms: list[str]) -> None:
    # "yesterday" matched every text that said it, whatever day that text meant: an old
    # memory saying "Yesterday I fixed the boiler" outranked the fix of yesterday.
    assert query_terms(query) == terms


def test_a_literal_hit_is_seen_in_the_index_s_form_of_chinese() -> None:
    stored = cjk_bigrams("上线使用蓝绿发布流程。We ship blue 发布.").casefold()
    assert is_in(literal_forms("蓝绿发布流程"), stored)
    assert is_in(literal_forms("blue 发布"), stored)
    assert is_in(literal_forms("We ship"), stored)
    assert not is_in(literal_forms("绿色发布"), stored)
    assert literal_forms("Blue Green") == ("blue green",)
