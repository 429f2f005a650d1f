from __future__ import annotations

from somnid.recall.text import cjk_bigrams, fts_query, query_terms


def test_cjk_runs_become_bigrams() -> None:
    assert cjk_bigrams("部署窗口 is Tue").split() == ["部署", "署窗", "窗口", "is", "Tue"]
    assert cjk_bigrams("用 venv").split() == ["用", "venv"]
    assert cjk_bigrams("no cjk here") == "no cjk here"


def test_query_terms() -> None:
    assert query_terms("When can we deploy? 部署窗口") == ["deploy", "部署", "署窗", "窗口"]
    assert query_terms("When can we deploy?", drop_stop_words=False) == [
        "when", "can", "we", "deploy"
    ]  # fmt: skip
    assert query_terms("what is it") == ["what", "is", "it"]  # nothing but stop words: keep them
    assert query_terms("我的猫叫什么") == ["我的", "的猫", "猫叫", "叫什"]
    assert query_terms("a I x") == []  # single latin letters never score
    assert query_terms("don't DON'T") == ["don't"]


def test_fts_query_quotes_everything() -> None:
    assert fts_query(['say "hi"', "OR", "NEAR"]) == '"say ""hi""" OR "OR" OR "NEAR"'
