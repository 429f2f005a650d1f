"""The pipeline's plain parts: windows, relative dates, the checks, the answer schemas."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from somnid.dream.pipeline.checks import (
    GROUNDED_SHARE,
    anchor,
    copies_placeholder,
    first_person,
    grounded_share,
)
from somnid.dream.pipeline.runner import asked
from somnid.dream.pipeline.schemas import (
    AnswerError,
    extraction_schema,
    parse_json,
    read_decision,
    read_extraction,
    whole_sentences,
)
from somnid.dream.pipeline.windows import lines_of, own_sentences, render, windows_of
from somnid.dream.similarity import content_words, restates, similarity
from somnid.memory.dates import absolutise
from somnid.recall.assoc import estimate_tokens
from somnid.sessions.transcript import Transcript, Turn

WEDNESDAY = dt.date(2023, 10, 4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yesterday I met Ann in Boston", "Yesterday (2023-10-03) I met Ann in Boston"),
        ("We went camping last weekend", "We went camping last weekend (weekend of 2023-09-30)"),
        ("two weeks ago we adopted a dog", "two weeks ago (2023-09-20) we adopted a dog"),
        ("I start next month", "I start next month (2023-11)"),
        ("see you tomorrow!", "see you tomorrow (2023-10-05)!"),
        ("last Friday was fun", "last Friday (2023-09-29) was fun"),
        ("Next year I move", "Next year (2024) I move"),
        ("the day before yesterday", "the day before yesterday (2023-10-02)"),
        ("我昨天去了北京", "我昨天 (2023-10-03)去了北京"),
        ("上周三我们开会", "上周三 (2023-09-27)我们开会"),
        ("三天前下过雨", "三天前 (2023-10-01)下过雨"),
        ("去年夏天", "去年夏天 (summer 2022)"),
        ("recently I read a book", "recently I read a book"),
        ("Yesterday (2023-10-03) again", "Yesterday (2023-10-03) again"),
    ],
)
def test_relative_dates_become_absolute(text: str, expected: str) -> None:
    assert absolutise(text, WEDNESDAY)[0] == expected


def _transcript(*turns: tuple[str, str | None, str]) -> Transcript:
    when = dt.datetime(2023, 10, 4, 18, 30, tzinfo=dt.UTC)
    return Transcript(
        Path("2026-10-10_001.md"),
        {"user": "caroline"},
        [Turn(role, speaker, when, text) for role, speaker, text in turns],
    )


def test_lines_know_who_spoke_and_windows_never_split_a_line() -> None:
    transcript = _transcript(
        ("user", None, "I moved to Lisbon."),
        ("user", "Melanie", "Welcome!"),
        ("agent", None, "Noted."),
        *[("user", "Caroline", f"Line {n} " + "word " * 40) for n in range(10)],
    )
    lines = lines_of(transcript)
    assert [(line.id, line.speaker, line.own_user) for line in lines[:4]] == [
        ("L1", "caroline", True),
        ("L2", "Melanie", False),
        ("L3", "agent", False),
        ("L4", "Caroline", True),  # the log's user, named in another case
    ]
    windows = windows_of("log", lines, 200)
    assert len(windows) > 1
    assert [line.id for w in windows for line in w.lines] == [line.id for line in lines]
    assert render(windows[0], dt.UTC).startswith("1 [2023-10-04 18:30] caroline: I moved")


def test_windows_are_even_and_leave_no_small_tail() -> None:
    """Every window pays the instructions again: a log a little over the budget is read in
    one window, and a long one in windows of even size, not full ones and a scrap."""
    transcript = _transcript(*[("user", "Ann", f"Line {n} " + "word " * 20) for n in range(60)])
    lines = lines_of(transcript)
    cost = [estimate_tokens(line.text) + 12 for line in lines]
    assert len(windows_of("log", lines[:11], sum(cost[:11]) * 9 // 10)) == 1  # 11 % over
    windows = windows_of("log", lines, 1000)  # 60 lines of about 40 tokens: 2,400 tokens
    sizes = [sum(estimate_tokens(line.text) + 12 for line in w.lines) for w in windows]
    assert len(windows) == 3 and max(sizes) - min(sizes) <= max(cost)
    assert [line.id for w in windows for line in w.lines] == [line.id for line in lines]
    assert [w.number for w in windows] == [1, 2, 3]
    assert windows_of("log", [], 1000) == []


def test_grounding_counts_content_words_in_the_evidence() -> None:
    evidence = ["Calvin We did, and I bought a blue kite for my niece Mira."]
    assert grounded_share("Calvin bought a blue kite for his niece Mira.", evidence) == 1.0
    assert grounded_share("Alice deploys payments with kubectl.", evidence) == 0.0
    assert "kite" in content_words("The KITE") and "the" not in content_words("the kite")
    assert content_words("西湖边") == {"西湖", "湖边"}


def test_placeholders_and_first_person_are_recognised() -> None:
    assert copies_placeholder("<text>") == "<text>"
    assert copies_placeholder("See <anything here> now") == "<anything here>"
    assert copies_placeholder("Calvin bought a kite.") is None
    assert first_person("I bought a kite") and first_person("We did, and my niece")
    assert not first_person("Calvin bought a kite")


def test_similarity_is_overlap_of_content_words() -> None:
    assert similarity("Calvin bought a blue kite", "calvin bought a blue kite!") == 1.0
    assert similarity("Calvin bought a blue kite", "Dana prefers green tea") == 0.0


@pytest.mark.parametrize(
    ("new", "old", "same"),
    [
        ("Caroline went to the LGBTQ support group on 7 May 2023.",
         "Caroline attended an LGBTQ support group on 7 May 2023", True),
        ("Ann ran five km yesterday", "Yesterday Ann ran five km", True),
        ("User prefers dark mode in the editor", "The user prefers dark mode in the editor.",
         True),
        ("The deadline for the Berlin office is in March.",  # says less: nothing new
         "The deadline for the Berlin office is March 15.", True),
        # A changed detail is a correction: a number, a month, a weekday, a name, a count.
        ("The tax filing deadline for the Berlin office is April 15.",
         "The tax filing deadline for the Berlin office is March 15.", False),
        ("The team meeting happens on Thursday at 10 in the blue room",
         "The team meeting happens on Tuesday at 10 in the blue room", False),
        ("The team meeting happens on Tuesday at 11 in the blue room",
         "The team meeting happens on Tuesday at 10 in the blue room", False),
        ("Ann moved from Paris to Munich last spring", "Ann moved from Paris to Berlin last spring",
         False),
        ("Melanie has three dogs and a cat at home", "Melanie has two dogs and a cat at home",
         False),
        ("Melanie does not eat meat at all", "Melanie eats meat at all", False),
        ("Melanie eats meat at all", "Melanie does not eat meat at all", False),
        ("会议定在四月十五日举行", "会议定在三月十五日举行", False),
        ("会议定在星期四举行", "会议定在星期二举行", False),
        # From the review: restatements the first version took for corrections ...
        ("In June, renew the passport.", "Renew the passport in June.", True),
        ("On Monday Ann starts her new job at the bakery",
         "Ann starts her new job at the bakery on Monday", True),
        ("Ann has three cats at home", "Ann has 3 cats at home", True),
        ("The invoice was 1,200 euros for the Berlin office",
         "The invoice was 1200 euros for the Berlin office", True),
        ("Jess went hiking with her dog", "jess went hiking with her dog", True),
        ("Ann may visit Paris in spring", "Ann may visit Paris in spring.", True),
        # ... and corrections it took for restatements.
        ("Grandpa is sixty years old and lives alone",
         "Grandpa is seventy years old and lives alone", False),
        ("The team meeting is today at noon in room B",
         "The team meeting is tomorrow at noon in room B", False),
        ("The standup is at 3pm in the blue room", "The standup is at 3am in the blue room",
         False),
    ],
)  # fmt: skip
def test_a_restatement_has_the_same_words_and_details(new: str, old: str, same: bool) -> None:
    # A time probe: a correction of one date was a duplicate (the same words but one).
    assert restates(new, old) is same


def test_an_extraction_answer_is_checked_against_its_window() -> None:
    ids = ["L1", "L2", "L3"]
    # Lines are named by number (what the grammar allows); an id or a numeral in a string
    # is read too, from a model without the grammar.
    good = {"memories": [{"evidence": [1, "L1", "2", " l2 "], "kind": "fact", "text": " a  b "}]}
    [proposal] = read_extraction(good, ids, 2)
    assert (proposal.evidence, proposal.text) == (("L1", "L2"), "a b")
    problems = [
        ({"memories": [{"evidence": [9], "kind": "fact", "text": "x"}]}, r"'9', .* \(1…3\)"),
        ({"memories": [{"evidence": ["L9"], "kind": "fact", "text": "x"}]}, "'L9'"),
        ({"memories": [{"evidence": [True], "kind": "fact", "text": "x"}]}, "'True'"),
        ({"memories": [{"evidence": ["one"], "kind": "fact", "text": "x"}]}, "'one'"),
        ({"memories": [{"evidence": [], "kind": "fact", "text": "x"}]}, "non-empty"),
        ({"memories": [{"evidence": ["L1"], "kind": "gossip", "text": "x"}]}, "kind"),
        ({"memories": [{"evidence": ["L1"], "kind": "fact", "text": ""}]}, "empty"),
        ({"memories": [{"evidence": ["L1"], "kind": "fact"}]}, "lacks text"),
        ({"memories": [{"evidence": ["L1"], "kind": "fact", "text": "x", "how": 1}]}, "unknown"),
        ({"memories": [{"evidence": ["L1"], "kind": "fact", "text": "x"}] * 3}, "at most 2"),
        ({"items": []}, "lacks memories"),
    ]
    for raw, why in problems:
        with pytest.raises(AnswerError, match=why):
            read_extraction(raw, ids, 2)
    schema = extraction_schema(ids, 4, 2)
    memories = schema["properties"]["memories"]
    assert (memories["minItems"], memories["maxItems"]) == (2, 4)
    evidence = memories["items"]["properties"]["evidence"]["items"]
    assert evidence == {"type": "integer", "enum": [1, 2, 3]}


def test_a_window_asks_for_memories_by_what_it_shows() -> None:
    # One person's window shows only their own news: a memory a line, three quarters of
    # that at least once it has four lines; a shared window, one per four lines, half.
    assert asked(8, True, 8) == (8, 6)
    assert asked(3, True, 8) == (3, 0)
    assert asked(12, True, 8) == (8, 6)
    assert asked(16, False, 8) == (4, 2)
    assert asked(3, False, 8) == (1, 0)
    assert asked(40, False, 8) == (8, 4)


def test_a_decision_needs_a_target_and_a_text_to_merge() -> None:
    assert (
        read_decision({"action": "known", "target": "none", "text": ""}, ["E1"]).action == "known"
    )
    with pytest.raises(AnswerError, match="needs a target"):
        read_decision({"action": "merge", "target": "none", "text": "x"}, ["E1"])
    with pytest.raises(AnswerError, match="needs the text"):
        read_decision({"action": "supersede", "target": "E1", "text": ""}, ["E1"])
    with pytest.raises(AnswerError, match="target must be one of"):
        read_decision({"action": "add", "target": "E7", "text": ""}, ["E1"])


def test_json_is_found_in_prose_and_a_cut_text_ends_at_a_sentence() -> None:
    body: dict[str, list[object]] = {"memories": []}
    assert parse_json("Here you go: ```json\n" + json.dumps(body) + "\n``` done") == body
    with pytest.raises(AnswerError, match="no JSON"):
        parse_json("I could not find anything.")
    cut = ("One whole sentence here. " * 30)[:595] + " and then"
    assert whole_sentences(cut).endswith("sentence here.")
    assert whole_sentences("Short and fine") == "Short and fine"


def test_a_window_shows_the_time_only_where_it_changed() -> None:
    start = dt.datetime(2023, 10, 4, 18, 30, tzinfo=dt.UTC)
    turns = [
        Turn("user", "Ann", start, "one"),
        Turn("user", "Bo", start + dt.timedelta(seconds=20), "two"),
        Turn("user", "Ann", start + dt.timedelta(minutes=5), "three"),
        Turn("user", "Bo", start + dt.timedelta(days=1), "four"),
    ]
    lines = lines_of(Transcript(Path("x.md"), {}, turns))
    assert render(windows_of("x", lines, 1000)[0], dt.UTC).split("\n") == [
        "1 [2023-10-04 18:30] Ann: one",
        "2 Bo: two",
        "3 [18:35] Ann: three",
        "4 [2023-10-05 18:30] Bo: four",
    ]


def test_a_paraphrase_of_the_next_line_is_anchored_there() -> None:
    lines = [
        "Jon: I lost my job at the bank last month.",
        "Gina: Oh no, what will you do now?",
        "Jon: I will open a dance studio by the ocean.",
        "Gina: That is brave, I love it.",
    ]
    # Cited L2, but it says what L3 says: anchored on L3.
    assert anchor("Jon will open a dance studio by the ocean.", [1], lines) == [2]
    # Cited right: kept.
    assert anchor("Jon lost his job at the bank.", [0], lines) == [0]
    # Nothing in the window says it: the cited line stays, for the check to refuse.
    assert anchor("Jon bought a red sports car in Milan.", [1], lines) == [1]


def test_lines_found_elsewhere_by_word_overlap_are_not_evidence() -> None:
    """A line that shares words with a claim, far from the lines cited, is not a line that
    says it: the cited lines stay, for the checks to refuse (last round, lines picked from
    the whole window this way made a claim about one person cite the other's)."""
    lines = [
        "Tim: I joined a fantasy literature forum last night.",
        "John: I'm exploring endorsement opportunities with sports brands.",
        *[f"Tim: filler line {n} about nothing much at all." for n in range(6)],
        "John: I'm considering Nike and Under Armour.",
        "Tim: Cool, keep me posted.",
    ]
    text = "John is exploring endorsement opportunities with Nike and Under Armour."
    assert grounded_share(text, [lines[i] for i in (4, 5)]) < GROUNDED_SHARE
    assert anchor(text, [4, 5], lines) == [4, 5]
    # Near the cited line (two lines either side), a better one is still found.
    assert anchor("Tim joined a fantasy literature forum.", [2], lines) == [0]


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        # A greeting and questions around the news: only the news is the speaker's.
        (
            "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you?",
            "I'm swamped with the kids & work.",
        ),
        # Praise of the other and a pointer to a photo: nothing of the speaker's own.
        ("You'd be a great counselor! By the way, take a look at this.", ""),
        # A sentence that goes on from one of the speaker's, speaking to no one, stays.
        (
            "Painting's a fun way to express my feelings. It's a great way to relax after work.",
            "Painting's a fun way to express my feelings. It's a great way to relax after work.",
        ),
        # ... but not one that turns to the other person.
        ("I ran a charity race. You should try it!", "I ran a charity race."),
        ("Did I tell you about my trip?", ""),
        (
            "Let's watch your film at the Roxie next Saturday!",
            "Let's watch your film at the Roxie next Saturday!",
        ),
        (
            "We're thinking about going camping next month.",
            "We're thinking about going camping next month.",
        ),
        ("Immediately, Ian agreed.", ""),  # "I" inside a word is no first person
        # Casual English leaves the subject out: still the speaker's own.
        (
            "Hey Maria! Been busy volunteering at the homeless shelter. Just started aerial "
            "yoga, it's great. Have you tried it?",
            "Been busy volunteering at the homeless shelter. Just started aerial yoga, it's great.",
        ),
        ("Dance floors help avoid injuries.", ""),  # a general remark names no one
        # Addressed to the other: about them, though it says "I".
        ("I'm so proud of you for spreading awareness.", ""),
        (
            "I'll definitely check it out. Thanks for the recommendation!",
            "I'll definitely check it out.",
        ),
        ("Sure, I'll give you a shout whenever I run out of things to watch!", ""),
        ("我上周去了杭州。你呢？", "我上周去了杭州。"),
        ("你最近怎么样？我们下个月去露营吧！很期待。你要来吗？", "我们下个月去露营吧！"),
        ("你真棒！", ""),
    ],
)
def test_a_one_person_window_shows_what_they_say_of_themselves(said: str, shown: str) -> None:
    assert own_sentences(said) == shown


def test_json_nested_past_the_stack_is_an_answer_error_not_a_failed_dream() -> None:
    # A probe: a reply of {"candidates": [[[…3000…]]]} ended the whole dream in error
    # (RecursionError); a stage's bad answer is an AnswerError it retries or skips.
    deep = '{"candidates": ' + "[" * 3000 + "]" * 3000 + "}"
    with pytest.raises(AnswerError, match="nested too deep"):
        parse_json(deep)
    with pytest.raises(AnswerError, match="nested too deep"):
        parse_json("Here: " + deep + " done")
