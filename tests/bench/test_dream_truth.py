"""The dream benchmark's own checks of truth: who a memory is about, whether it says
anything particular, which LoCoMo observations it states; and their agreement with the
memories labelled by hand (bench/data/dream_labels.json)."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.dream_quality import DEFAULT_DATA, LABELS, label_agreement

from bench import _truth

SPEAKERS = ["Joanna", "Nate"]
TURNS = [
    ("Joanna", "Hey Nate! How have you been?"),
    ("Nate", "Great news, I started a new job at the aquarium in Monterey."),
    ("Joanna", "Congrats on the aquarium job! I finished my first screenplay last Friday."),
    ("Nate", "That is amazing, congrats on the screenplay!"),
]
OBSERVATIONS = [
    ("Nate", "Nate started a new job at the aquarium in Monterey.", "D1:2"),
    ("Joanna", "Joanna finished her first screenplay.", "D1:3"),
]


def judge(text: str, person: str | None = None) -> _truth.Judgement:
    unit = _truth.Unit("conv", [1], text, "episode", "episode/x", person)
    return _truth.judge(unit, TURNS, SPEAKERS, OBSERVATIONS)


def test_a_fact_on_the_wrong_person_is_misattributed_and_states_nothing() -> None:
    right = judge("Nate started a new job at the aquarium in Monterey.")
    assert not right.misattributed and right.observations == ["D1:2"]
    # Joanna echoed the aquarium after Nate said it: his news, not hers.
    wrong = judge("Joanna started a new job at the aquarium in Monterey.")
    assert wrong.misattributed and wrong.observations == []
    pair = judge("Joanna and Nate finished a screenplay.")
    assert pair.subjects == ("Joanna", "Nate") and pair.misattributed
    # A sentence that names nobody is about the one before it.
    assert judge("Joanna finished a screenplay. He started at the aquarium.").misattributed
    # A line of a person's entry is that person's.
    assert not judge("Finished her first screenplay.", person="Joanna").misattributed


def test_a_memory_that_says_only_that_people_talked_is_vague() -> None:
    assert judge("Joanna and Nate shared their experiences and feelings.").vague
    assert not judge("Joanna finished her first screenplay last Friday.").vague


def test_the_checks_agree_with_the_hand_labels() -> None:
    """Pinned: a change to the checks that agrees less with the labels fails here."""
    if not Path(DEFAULT_DATA).exists():
        pytest.skip("the LoCoMo dev split is not beside the checkout (../shared/data)")
    agreement = label_agreement(LABELS, DEFAULT_DATA)
    assert agreement is not None and agreement["labels"] >= 60
    assert agreement["attribution"] >= 0.9 and agreement["vague"] >= 0.9
    assert agreement["observation_precision"] >= 0.9
    assert agreement["observation_recall"] >= 0.8
