"""Names become safe slugs; anything that could leave the data dir is refused."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from somnid.errors import InvalidName
from somnid.memory.names import check_name, slugify


@pytest.mark.parametrize(
    ("raw", "slug"),
    [
        ("python-venv-pitfall", "python-venv-pitfall"),
        ("Python venv pitfall", "Python-venv-pitfall"),
        ("  deploy:  window?  ", "deploy-window"),
        ("部署 窗口", "部署-窗口"),
        ("ＦＵＬＬ　ｗｉｄｔｈ", "FULL-width"),  # NFKC
        ("a\u200bb", "ab"),  # zero-width space removed
        ("a\ufe0fb", "ab"),  # a variation selector too: "a️b" looked like "ab"
        ("e\u0301", "é"),  # a mark on a letter stays (NFKC composes it)
        ("release.notes.v2", "release.notes.v2"),
        ("{{template}}", "template"),
        ("--x--", "x"),
        ("ep-20261001-101500", "ep-20261001-101500"),
    ],
)
def test_slugs(raw: str, slug: str) -> None:
    assert slugify(raw) == slug


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "   ",
        ".",
        "..",
        "../etc/passwd",
        "..\\windows",
        "/etc/passwd",
        "a/b",
        "a\\b",
        "nul\x00byte",
        "line\nbreak",
        "tab\there",
        "\x7f",
        "CON",
        "con.txt",
        "LPT1",
        "aux",
        "archived",
        "???",
        "\u200b\u200b",
        "\u0301\u0301",  # marks alone show as nothing
        "x" * 101,
        "名" * 80,  # 240 bytes of UTF-8
    ],
)
def test_hostile_names_are_refused(raw: str) -> None:
    with pytest.raises(InvalidName):
        slugify(raw)


def test_the_archive_s_number_may_go_beyond_the_length_limit() -> None:
    assert check_name("m" * 100 + "--12") == "m" * 100 + "--12"
    with pytest.raises(InvalidName):
        check_name("m" * 101 + "--2")
    with pytest.raises(InvalidName):
        check_name("m" * 100 + "-2")


@pytest.mark.parametrize("name", ["..", ".hidden", "a/b", "a b", "archived", "", "x\x00"])
def test_check_name_refuses_what_slugify_would_change(name: str) -> None:
    with pytest.raises(InvalidName):
        check_name(name)


@given(st.text(max_size=150))
def test_any_text_is_a_safe_slug_or_refused(raw: str) -> None:
    try:
        slug = slugify(raw)
    except InvalidName:
        return
    assert "/" not in slug and "\\" not in slug and "\x00" not in slug
    assert slug not in (".", "..") and not slug.startswith(".")
    assert check_name(slug) == slug
    assert slugify(slug) == slug  # idempotent
