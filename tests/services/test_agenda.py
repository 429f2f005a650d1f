"""Which intentions the prompt raises: due, upcoming, someday, and cue-matched."""

from __future__ import annotations

import datetime as dt
from pathlib import PurePosixPath

import pytest

from somnid.memory.entry import Entry
from somnid.memory.intentions import Intention, agenda, cue_matches, intention_of, split_cues
from somnid.memory.kinds import Kind

TODAY = dt.date(2026, 10, 10)


def intention(id: str, due: dt.date | None = None, cue: str = "", priority: str = "mid",
              status: str = "open") -> Intention:  # fmt: skip
    return Intention(
        id, f"do {id}", due, split_cues(cue), priority, status, f"memory/intentions/{id}/INTENT.md"
    )


def ids(items: list[Intention]) -> list[str]:
    return [item.id for item in items]


def test_groups_and_order() -> None:
    plan = agenda(
        [
            intention("late", TODAY - dt.timedelta(days=5)),
            intention("today", TODAY, priority="high"),
            intention("in-3", TODAY + dt.timedelta(days=3)),
            intention("in-4", TODAY + dt.timedelta(days=4), cue="passport"),
            intention("someday-b"),
            intention("someday-a", priority="high"),
            intention("done", TODAY, status="completed"),
        ],
        TODAY,
    )
    assert ids(plan.due) == ["today", "late"]  # the most pressing first
    assert ids(plan.upcoming) == ["in-3"]
    assert ids(plan.someday) == ["someday-a", "someday-b"]
    assert plan.cued == [] and plan.more == 0  # in-4 waits for its cue


def test_a_pressing_one_is_never_behind_the_cap_and_what_is_is_counted() -> None:
    """A time probe: ten old low-priority ones filled the due group, and a high-priority
    one due today was not shown, with nothing to say so."""
    old = [intention(f"old-{n}", TODAY - dt.timedelta(days=30 - n), priority="low")
           for n in range(10)]  # fmt: skip
    plan = agenda([*old, intention("pay", TODAY, priority="high"),
                   intention("mid", TODAY - dt.timedelta(days=40))], TODAY)  # fmt: skip
    assert ids(plan.due)[:2] == ["pay", "mid"]
    assert ids(plan.due)[2:] == [f"old-{n}" for n in range(9, 1, -1)]  # the latest first
    assert plan.more == 2
    someday = [intention(f"s{n}", priority="low") for n in range(6)]
    plan = agenda([*someday, intention("s-high", priority="high")], TODAY)
    assert ids(plan.someday)[0] == "s-high" and plan.more == 2


def test_cue_brings_far_and_capped_ones() -> None:
    many = [intention(f"s{n:02d}", cue="garden" if n == 9 else "") for n in range(9)]
    many.append(intention("s09", cue="garden"))
    many.append(intention("far", TODAY + dt.timedelta(days=40), cue="Passport, 护照"))
    plan = agenda(many, TODAY, "We need new 护照 photos and the garden")
    assert len(plan.someday) == 5
    assert ids(plan.cued) == ["far", "s09"]  # dated first; s09 is beyond the someday cap
    # "+N more" counts what is not shown: s09 is now (it said 5 of which one was listed),
    # and "far" (beyond the upcoming days) was never counted.
    assert plan.more == 4
    assert agenda(many, TODAY).more == 5


def test_cue_splitting_and_matching() -> None:
    assert split_cues("域名，domain、DNS; renew ,") == ("域名", "domain", "dns", "renew")
    assert split_cues(["A", " b "]) == ("a", "b")
    assert cue_matches(intention("x", cue="Domain"), "our DOMAIN expires")
    assert not cue_matches(intention("x"), "anything")


def test_moving_clock_moves_groups() -> None:
    item = intention("x", TODAY + dt.timedelta(days=10))
    assert not agenda([item], TODAY)
    assert ids(agenda([item], TODAY + dt.timedelta(days=7)).upcoming) == ["x"]
    assert ids(agenda([item], TODAY + dt.timedelta(days=10)).due) == ["x"]
    assert ids(agenda([item], TODAY + dt.timedelta(days=400)).due) == ["x"]  # never expires here


def test_a_cue_of_letters_matches_where_a_word_starts() -> None:
    # A cue matched anywhere in a word: `art` raised "Concert tickets" on "we start now",
    # the README's own `cert` fired on "concert".
    cert = intention("x", cue="TLS, cert")
    assert cue_matches(cert, "renew the certificate")
    assert cue_matches(cert, "the cert expires; TLS.")
    assert cue_matches(cert, "deploy_cert failed")  # an underscore parts words
    assert not cue_matches(cert, "tickets for the concert")
    assert not cue_matches(cert, "mtlsproxy is down")
    assert not cue_matches(intention("x", cue="art"), "we start now")
    assert cue_matches(intention("x", cue="Straße"), "STRASSE closed")  # casefolded both
    assert cue_matches(intention("x", cue="护照"), "我的护照过期了")  # no spaces in Chinese
    assert cue_matches(intention("x", cue="パスポート"), "新しいパスポートを")
    assert cue_matches(intention("x", cue=".net"), "upgrade asp.net now")  # not a letter first
    assert cue_matches(intention("x", cue="k8s"), "我们的k8s集群")  # Latin right after Chinese
    assert cue_matches(intention("x", cue="tickets"), "明天买tickets")


def test_a_thousand_cues_are_matched_where_they_start() -> None:
    # Each cue built a regular expression (~1 ms): with over 1,024 cues every prompt built
    # them all again, on the event loop. The rule is the same without them.
    many = intention("many", cue=",".join(f"q{n}x" for n in range(2000)))
    assert cue_matches(many, "see q1999x now") and cue_matches(many, "q0x")
    assert not cue_matches(many, "aq5x and q5 and q5y")
    assert cue_matches(intention("x", cue="cert"), "cert cert") and not cue_matches(
        intention("x", cue="cert"), "concert, concert"
    )


@pytest.mark.parametrize(
    ("said", "archived", "status"),
    [
        ("pending", False, "open"),
        ("todo", False, "open"),
        ("42", False, "open"),
        ("", False, "open"),
        ("Open", False, "open"),
        ("done", False, "completed"),
        ("DONE", False, "completed"),
        ("cancelled", False, "cancelled"),
        ("", True, "closed"),
        ("whatever", True, "closed"),
    ],
)
def test_a_status_somnid_cannot_use_is_read_as_missing(
    said: str, archived: bool, status: str
) -> None:
    # `pending`, `todo` or `42` typed by hand made a live intention vanish from every list.
    meta = {"name": "pi-1", "description": "renew", "status": said}
    entry = Entry(Kind.INTENTION, "pi-1", archived, meta, "", PurePosixPath("x"), "e", 0.5)
    assert intention_of(entry, dt.UTC).status == status


def test_a_live_intention_with_the_archive_s_stamp_is_open() -> None:
    # A restore killed between its move and its unstamp left a live intention that still
    # said "completed": it had vanished from every list, and a second restore found nothing.
    meta = {"description": "renew", "status": "completed", "archived_at": "2026-10-09T10:00:00Z"}
    live = Entry(Kind.INTENTION, "pi-1", False, meta, "", PurePosixPath("x"), "e", 0.5)
    assert intention_of(live, dt.UTC).status == "open"
    archived = Entry(Kind.INTENTION, "pi-1", True, meta, "", PurePosixPath("x"), "e", 0.5)
    assert intention_of(archived, dt.UTC).status == "completed"
