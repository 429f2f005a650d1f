"""What a person wrote survives a dream: a merge that leaves part of an entry out keeps
it, an edit made while the model decides is not written over, a profile loses no line, a
skill a person keeps (``auto_merge: false``) is neither merged into nor archived. And one
log the model's side refuses does not hold back the others, nor takes every dream's time
for ever."""

from __future__ import annotations

import datetime as dt

import pytest

from somnid.dream.llm.base import LLMRejected
from somnid.dream.pipeline.people import parse
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from tests.dream.pipeline.fakes import Request, ScriptedJSON, by_stage, decision, extraction
from tests.dream.pipeline.helpers import conversation
from tests.dream.pipeline.test_pipeline import BOSTON, entries, use

HAND_KITE = "Calvin bought a red kite for his niece Mira.\n\n## Notes\n- Her birthday is in June.\n"
MERGED = "Calvin bought a blue kite for his niece Mira, at the harbour in Boston."
KITE = "Calvin bought a blue kite for Mira."


async def _hand_kite(rt: Runtime) -> None:
    await rt.memories.create(
        Kind.KNOWLEDGE,
        "calvin-kite",
        description="Kites Calvin bought",
        body=HAND_KITE,
        fields={"type": "fact"},
    )


def _kite_merge() -> ScriptedJSON:
    return ScriptedJSON(
        by_stage(
            lambda r: extraction(("fact", ["L1", "L3"], KITE)), decision("merge", "E1", MERGED)
        )
    )


async def test_a_merge_keeps_the_old_text_its_merged_text_leaves_out(runtime: Runtime) -> None:
    await _hand_kite(runtime)
    await conversation(runtime, "chat-1", *BOSTON)
    use(runtime, _kite_merge())
    result = await runtime.dreamer.run("test")
    assert result.candidates["merged"] == 1, result.candidates
    entry = await runtime.memories.get(Kind.KNOWLEDGE, "calvin-kite")
    # "red" and the person's notes are not in the merged text: all of it stays, as written,
    # and the new memory's own text after it.
    assert entry.body.startswith(HAND_KITE.strip() + "\n\n" + KITE + "\n")
    assert entry.description == "Kites Calvin bought"
    assert "Source: session log" in entry.body


async def test_a_correction_of_a_persons_entry_is_merged_into_it_not_retiring_it(
    runtime: Runtime,
) -> None:
    # A probe: one model decision ("supersede") archived a hand-written entry, the person's
    # own section with it, for a new entry holding the model's sentence alone.
    await _hand_kite(runtime)
    await conversation(runtime, "chat-1", *BOSTON)
    corrected = "Calvin bought a blue kite, not a red one, for Mira."
    use(
        runtime,
        ScriptedJSON(
            by_stage(
                lambda r: extraction(("fact", ["L3"], KITE)), decision("supersede", "E1", corrected)
            )
        ),
    )
    result = await runtime.dreamer.run("test")
    assert (result.candidates["merged"], result.candidates["superseded"]) == (1, 0)
    entry = await runtime.memories.get(Kind.KNOWLEDGE, "calvin-kite")
    assert not entry.archived and entry.body.startswith(HAND_KITE.strip() + "\n\n")
    assert KITE in entry.body  # the correction beside the person's text, in their entry
    assert len(entries(runtime, Kind.KNOWLEDGE)) == 1


async def test_a_persons_edit_while_the_model_decides_is_not_written_over(
    runtime: Runtime,
) -> None:
    await _hand_kite(runtime)
    await conversation(runtime, "chat-1", *BOSTON)
    llm = use(runtime, _kite_merge())
    edited = HAND_KITE + "- Freeze from Dec 20 to Jan 5.\n"

    async def edit_when_asked_to_decide() -> None:
        if len(llm.requests) == 1:  # the extraction was answered; the decision is asked
            await runtime.memories.update(Kind.KNOWLEDGE, "calvin-kite", body=edited)

    llm.before = edit_when_asked_to_decide
    result = await runtime.dreamer.run("test")
    assert [r.stage for r in llm.requests] == ["extract", "decide"]
    assert result.candidates["merged"] == 1, result.candidates
    entry = await runtime.memories.get(Kind.KNOWLEDGE, "calvin-kite")
    # The merged text was made from the version before the edit: never written over it.
    assert entry.body.startswith(edited.strip() + "\n\n" + KITE + "\n")


async def test_a_merge_that_carries_every_old_word_replaces_the_text(runtime: Runtime) -> None:
    await runtime.memories.create(
        Kind.KNOWLEDGE,
        "calvin-kite",
        description="Calvin bought a kite for his niece Mira.",
        body="Calvin bought a kite for his niece Mira.",
        fields={"type": "fact"},
    )
    await conversation(runtime, "chat-1", *BOSTON)
    use(runtime, _kite_merge())
    assert (await runtime.dreamer.run("test")).candidates["merged"] == 1
    entry = await runtime.memories.get(Kind.KNOWLEDGE, "calvin-kite")
    assert entry.body.startswith(MERGED + "\n\n> ")
    assert entry.description == MERGED


PIA = (
    ("Pia", "Morning! The cats woke me at five again."),
    ("Ola", "Ha, how many cats do you have now?"),
    ("Pia", "Two cats, still. They run the flat."),
    ("Ola", "Sounds like it, see you at lunch."),
)


async def _pia(rt: Runtime) -> None:
    body = "- Pia keeps two cats, named Miso and Tofu. (2023-09-01)\n"
    fields = {"type": "person", "about": "Pia", "actors": "Pia"}
    await rt.memories.create(
        Kind.KNOWLEDGE, "about-pia", description="What is known of Pia", body=body, fields=fields
    )


async def test_a_merged_line_of_a_person_that_says_less_keeps_the_old_line(
    runtime: Runtime,
) -> None:
    await _pia(runtime)
    await conversation(runtime, "chat-1", *PIA)
    use(
        runtime,
        ScriptedJSON(
            by_stage(
                lambda r: extraction(("fact", ["L3"], "Pia keeps two cats.")),
                decision("merge", "E1", "Pia keeps two cats."),
            )
        ),
    )
    result = await runtime.dreamer.run("test")
    assert result.candidates["known"] == 1, result.candidates
    pia = await runtime.memories.get(Kind.KNOWLEDGE, "about-pia")
    assert [f.text for _, f in parse(pia.body).facts] == [
        "Pia keeps two cats, named Miso and Tofu."
    ]


async def test_a_merged_line_that_drops_the_new_fact_keeps_it_beside_the_old(
    runtime: Runtime,
) -> None:
    # A review: the merged line said less than the old one, and the candidate's news (the
    # dog) was dropped with it.
    await _pia(runtime)
    said = ("Pia", "Two cats, still, and now a dog named Rex as well.")
    await conversation(runtime, "chat-1", *PIA[:2], said, PIA[3])
    news = "Pia keeps two cats and a dog named Rex."
    use(
        runtime,
        ScriptedJSON(
            by_stage(
                lambda r: extraction(("fact", ["L3"], news)),
                decision("merge", "E1", "Pia keeps two cats."),
            )
        ),
    )
    result = await runtime.dreamer.run("test")
    assert result.candidates["added"] == 1, result.candidates
    pia = await runtime.memories.get(Kind.KNOWLEDGE, "about-pia")
    facts = [f.text for _, f in parse(pia.body).facts]
    assert facts == ["Pia keeps two cats, named Miso and Tofu.", news]


EVE = (
    ("eve", "I play chess at the library every Saturday."),
    ("Sam", "Nice, since when?"),
    ("eve", "Since spring. It is the best part of my week."),
    ("Sam", "Good for you."),
)
CHESS = "eve plays chess at the library every Saturday."


async def _profile(rt: Runtime, body: str) -> None:
    await rt.memories.create(
        Kind.PROFILE, "eve", description="Profile of user eve", body=body, fields={"user_id": "eve"}
    )


def _about_eve() -> ScriptedJSON:
    return ScriptedJSON(by_stage(lambda r: extraction(("about_user", ["L1"], CHESS))))


async def test_a_profile_line_is_added_and_none_is_taken_away(runtime: Runtime) -> None:
    hand = "# Eve's own profile (keep!)\n\nWritten by Eve herself.\n\n" + "\n".join(
        f"- Hand note {n}" for n in range(197)
    )
    await _profile(runtime, hand)
    await conversation(runtime, "chat-1", *EVE, user="eve")
    use(runtime, _about_eve())
    result = await runtime.dreamer.run("test")
    assert result.candidates.get("profile") == 1, {k: v for k, v in result.candidates.items() if v}
    profile = await runtime.memories.get(Kind.PROFILE, "eve")
    assert profile.body.startswith(hand + "\n- " + CHESS)  # 200 lines now, every one kept

    # Full: the next line is refused and said in the journal; the profile is as it was.
    await conversation(runtime, "chat-2", ("eve", "I also swim on Mondays."), user="eve")
    said = "eve swims on Mondays."
    use(runtime, ScriptedJSON(by_stage(lambda r: extraction(("about_user", ["L1"], said)))))
    result = await runtime.dreamer.run("test")
    assert result.candidates["profile_refused"] == 1, result.candidates
    assert (await runtime.memories.get(Kind.PROFILE, "eve")).body == profile.body
    assert result.journal is not None
    journal = (runtime.settings.data_dir / result.journal).read_text()
    assert "tidy it by hand" in journal


async def test_a_profile_fact_said_again_another_day_is_not_a_second_line(
    runtime: Runtime,
) -> None:
    await _profile(runtime, f"- {CHESS} (2023-09-01)\n")
    await conversation(runtime, "chat-1", *EVE, user="eve")
    use(runtime, _about_eve())
    result = await runtime.dreamer.run("test")
    assert result.candidates["duplicate"] == 1, result.candidates
    assert (await runtime.memories.get(Kind.PROFILE, "eve")).body == f"- {CHESS} (2023-09-01)\n"


RELEASE = (
    ("Calvin", "To cut a release, tag the commit, then run make publish from a clean tree."),
    ("Dana", "And announce it in the channel afterwards?"),
    ("Calvin", "Yes, always announce it once the packages are up."),
    ("Dana", "Got it."),
)


@pytest.mark.parametrize("action", ["supersede", "merge"])
async def test_a_skill_a_person_keeps_is_neither_merged_nor_archived(
    runtime: Runtime, action: str
) -> None:
    kept = "Tag the commit, then run make publish.\n"
    await runtime.memories.create(
        Kind.SKILL, "cut-release", description="Shipping", body=kept, fields={"auto_merge": False}
    )
    await conversation(runtime, "chat-1", *RELEASE)
    text = "To cut a release, tag the commit, run make publish from a clean tree, then announce it."
    llm = use(
        runtime,
        ScriptedJSON(
            by_stage(
                lambda r: extraction(("procedure", ["L1", "L3"], text)),
                decision(action, "E1", text),
            )
        ),
    )
    result = await runtime.dreamer.run("test")
    assert [r.stage for r in llm.requests] == ["extract", "decide"]
    assert result.candidates["added"] == 1, {k: v for k, v in result.candidates.items() if v}
    skill = await runtime.memories.get(Kind.SKILL, "cut-release")
    assert (skill.archived, skill.body) == (False, kept)
    assert len(entries(runtime, Kind.SKILL)) == 2  # the new procedure beside it


async def test_one_log_the_model_refuses_leaves_it_pending_and_the_others_dreamed(
    runtime: Runtime,
) -> None:
    refused, others = [], []
    for n in (1, 2):  # one refused, one answered: each refusal is that log's words
        refused.append(await conversation(runtime, f"chat-0{n}", ("Calvin", "FORBIDDEN words.")))
        others.append(await conversation(runtime, f"chat-{n}", *BOSTON))

    def script(request: Request) -> str:
        if "FORBIDDEN" in request.prompt:
            raise LLMRejected("HTTP 400: the prompt was flagged")
        return extraction(("fact", ["L3"], KITE))

    llm = use(runtime, ScriptedJSON(by_stage(script)))
    result = await runtime.dreamer.run("test")
    assert result.processed == others, (result.status, result.reason)
    assert set(refused) <= {p.path.stem for p in await runtime.sessions.pending_logs()}
    # The logs after it were asked at the level the server takes, not the one it refused.
    after = [r for r in llm.requests if "FORBIDDEN" not in r.prompt]
    assert all(r.options and r.options.response_format for r in after)

    # Refused alone (nothing answered), it is the endpoint's refusal: the dream says so.
    result = await runtime.dreamer.run("test")
    assert result.status == "interrupted" and "flagged" in (result.reason or "")


async def test_two_logs_refused_with_nothing_answered_between_end_the_dream(
    runtime: Runtime,
) -> None:
    # A review: a key revoked mid-dream made every later log a refusal, and the dream
    # ended "partial" (deep_sleep), hiding why.
    first = await conversation(runtime, "chat-1", *BOSTON)
    later = [await conversation(runtime, f"chat-{n}", *BOSTON) for n in (2, 3, 4)]
    llm = ScriptedJSON(lambda r: "")

    def script(request: Request) -> str:
        if not llm.reachable:
            raise LLMRejected("HTTP 401: the key was revoked")
        llm.reachable = False  # revoked after this answer: a probe is refused too
        return extraction(("fact", ["L3"], KITE))

    llm.script = by_stage(script)
    use(runtime, llm)
    result = await runtime.dreamer.run("test")
    assert result.status == "interrupted" and "revoked" in (result.reason or "")
    assert result.processed == [first]
    pending = {p.path.stem for p in await runtime.sessions.pending_logs()}
    assert set(later) <= pending
    assert len(llm.requests) == 1 + 2 * 3  # the fourth log was not asked at all


async def test_two_logs_filtered_in_a_row_hold_no_later_log_back(runtime: Runtime) -> None:
    # A review: the two oldest logs both filtered ended every dream, oldest first, for good.
    filtered = [
        await conversation(runtime, f"chat-0{n}", ("Calvin", "FORBIDDEN words.")) for n in (1, 2)
    ]
    later = await conversation(runtime, "chat-3", *BOSTON)

    def script(request: Request) -> str:
        if "FORBIDDEN" in request.prompt:
            raise LLMRejected("HTTP 400: the prompt was flagged")
        return extraction(("fact", ["L3"], KITE))

    use(runtime, ScriptedJSON(by_stage(script)))  # its probe is answered: the endpoint is up
    result = await runtime.dreamer.run("test")
    assert result.processed == [later], (result.status, result.reason)
    assert "2 refused by the model (HTTP 400: the prompt was flagged)" in (result.reason or "")
    assert set(filtered) <= {p.path.stem for p in await runtime.sessions.pending_logs()}


def _flagging(request: Request) -> str:
    if "FORBIDDEN" in request.prompt:
        raise LLMRejected("HTTP 400: the prompt was flagged")
    return extraction(("fact", ["L3"], KITE))


async def test_a_log_refused_three_dreams_in_a_row_is_passed_by_until_it_changes(
    runtime: Runtime,
) -> None:
    # A probe: a log an endpoint's filter refuses stayed pending, and every dream (one each
    # dream.idle_ms while nothing else waits) sent it again, for ever.
    filtered = await conversation(runtime, "chat-01", *BOSTON, ("Calvin", "FORBIDDEN words."))
    llm = use(runtime, ScriptedJSON(by_stage(_flagging)))
    for n in range(3):
        later = await conversation(runtime, f"chat-{n + 2}", *BOSTON)
        result = await runtime.dreamer.run("test")
        assert (result.processed, result.passed_by) == ([later], {}), result.reason
    why = "the model refused it: HTTP 400: the prompt was flagged (3 dreams)"
    assert await runtime.dreamer.waiting() == (0, {filtered: why})
    scheduler = runtime.scheduler  # a dream is due, but for the pending logs: none counts
    scheduler.last_dream = runtime.clock.now() - dt.timedelta(hours=1)
    scheduler.activity.last_running = runtime.clock.now() - dt.timedelta(hours=1)
    verdict = await scheduler.eligibility()
    assert verdict.reason == "0 pending logs", verdict
    asked = len(llm.requests)
    result = await runtime.dreamer.run("test")
    assert (result.logs, result.passed_by) == ([], {filtered: why})
    assert len(llm.requests) == asked  # not sent again
    pending = next(p for p in await runtime.sessions.pending_logs() if p.path.stem == filtered)
    assert pending.dream  # still pending, as it was: a person decides

    # A person's edit puts it back in line.
    text = pending.path.read_text("utf-8")
    pending.path.write_text(text.replace("FORBIDDEN words", "Kind words"), "utf-8")
    assert await runtime.dreamer.waiting() == (1, {})
    result = await runtime.dreamer.run("test")
    assert result.processed == [filtered], result.reason


async def test_the_journal_lists_the_logs_passed_by(runtime: Runtime) -> None:
    filtered = await conversation(runtime, "chat-01", ("Calvin", "FORBIDDEN words."))
    use(runtime, ScriptedJSON(by_stage(_flagging)))
    for n in range(4):
        await conversation(runtime, f"chat-{n + 2}", *BOSTON)
        result = await runtime.dreamer.run("test")
    assert set(result.passed_by) == {filtered}
    assert result.journal is not None
    journal = (runtime.layout.root / result.journal).read_text("utf-8")
    assert "## Passed by until they change" in journal
    assert f"- {filtered}: the model refused it: HTTP 400" in journal


async def test_an_endpoint_refusing_everything_is_no_logs_failure(runtime: Runtime) -> None:
    logs = [await conversation(runtime, f"chat-{n}", *BOSTON) for n in (1, 2)]
    llm = ScriptedJSON(lambda r: "")

    def script(request: Request) -> str:
        llm.reachable = False  # the key is revoked: every request and probe refused
        raise LLMRejected("HTTP 401: the key was revoked")

    llm.script = by_stage(script)
    use(runtime, llm)
    for _ in range(4):
        llm.reachable = True  # the dream's first probe passes, then the key is revoked
        result = await runtime.dreamer.run("test")
        assert result.status == "interrupted" and "revoked" in result.reason
    assert await runtime.dreamer.waiting() == (2, {})
    assert result.logs == logs


async def test_a_log_answered_unusably_three_dreams_in_a_row_is_passed_by(
    runtime: Runtime,
) -> None:
    garbled = await conversation(runtime, "chat-01", *BOSTON, ("Calvin", "GARBLED words."))

    def script(request: Request) -> str:
        return (
            "no JSON at all" if "GARBLED" in request.prompt else extraction(("fact", ["L3"], KITE))
        )

    use(runtime, ScriptedJSON(by_stage(script)))
    for n in range(3):
        await conversation(runtime, f"chat-{n + 2}", *BOSTON)
        result = await runtime.dreamer.run("test")
        assert garbled not in result.processed and not result.passed_by
    why = "the model's answer stayed unusable after a repair (3 dreams)"
    assert await runtime.dreamer.waiting() == (0, {garbled: why})


async def test_a_dream_that_consolidated_nothing_counts_against_no_log(runtime: Runtime) -> None:
    # A review: a cap on answers too low (every answer cut) or a wrong model's name failed
    # every log alike, and after three dreams every pending log was passed by.
    logs = [await conversation(runtime, f"chat-{n}", *BOSTON) for n in (1, 2)]
    use(runtime, ScriptedJSON(by_stage(lambda request: "no JSON at all")))
    for _ in range(4):
        result = await runtime.dreamer.run("test")
        assert result.processed == [] and result.passed_by == {}
    assert await runtime.dreamer.waiting() == (2, {})
    assert result.logs == logs
