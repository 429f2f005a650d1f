"""Dreams against what a client or a model may send: user ids and names that make no entry
name, names a person already holds in another case, answers whose JSON holds what no file
should, a session marked never to be dreamed while a dream reads it, and a cancel while a
dream finishes. Each leaves at most that one memory out; the dream goes on, its logs are
processed, and no later dream fails on them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from somnid.dream.llm.base import LLMRejected
from somnid.memory.kinds import Kind
from somnid.memory.names import name_for
from somnid.provenance import DreamRecord
from somnid.runtime import Runtime
from somnid.store import frontmatter
from tests.dream.pipeline.fakes import ScriptedJSON, extraction
from tests.dream.pipeline.helpers import conversation


def knowledge(rt: Runtime) -> dict[str, frontmatter.Document]:
    folder = rt.layout.root / "memory/knowledge"
    return {p.parent.name: frontmatter.parse(p.read_text()) for p in folder.glob("*/SKILL.md")}


@pytest.mark.parametrize(
    "user", ["../../etc", "team/alice", "Alice Smith", "u" * 150, "CON", "_bob", "bob."]
)
async def test_a_user_id_that_is_no_name_has_a_profile_the_prompt_shows(
    runtime: Runtime, user: str
) -> None:
    # Such an id ended the dream in error at the profile line, every dream after it too,
    # and held up every log behind it; "Alice Smith" was written where the prompt never read.
    first = await conversation(
        runtime, "chat-1", (None, "I work as a baker in Porto and own three cats."), user=user
    )
    second = await conversation(runtime, "chat-2", (None, "I moved to Lyon in May."), user="bob")
    texts = iter(
        [
            extraction(("about_user", ["L1"], "The user works as a baker in Porto.")),
            extraction(("about_user", ["L1"], "The user moved to Lyon in May.")),
        ]
    )
    runtime.dreamer.backend = ScriptedJSON(lambda r: next(texts))
    result = await runtime.dreamer.run("test")
    assert (result.status, result.processed) == ("deep_sleep", [first, second]), result.reason
    profile = await runtime.memories.get(Kind.PROFILE, name_for(user))
    assert "baker in Porto" in profile.body and profile.meta["user_id"] == user
    sections = await runtime.prompt.build(speaker=user)
    assert "baker in Porto" in sections.identity.text
    bob = await runtime.memories.get(Kind.PROFILE, "bob")  # `_bob` went into bob's before
    assert "Lyon" in bob.body and "Porto" not in bob.body
    assert "Porto" not in (await runtime.prompt.build(speaker="bob")).identity.text


async def test_a_profile_kept_under_its_former_name_is_still_the_user_s(
    runtime: Runtime,
) -> None:
    # Dreams before kept `alice@example.com` under its slug; the prompt and the dream now
    # name it otherwise, and would have started over beside it.
    user = "alice@example.com"
    await runtime.memories.create(
        Kind.PROFILE, "alice-example.com", description="d", body="- Alice bakes.",
        fields={"user_id": user},
    )  # fmt: skip
    await runtime.memories.create(
        Kind.PROFILE, "bob-example.com", description="d", body="- Bob sails.",
        fields={"user_id": "bob-example.com"},
    )  # fmt: skip
    assert "Alice bakes." in (await runtime.prompt.build(speaker=user)).identity.text
    # Another user's profile under that slug is not taken for this one's.
    assert "Bob sails." not in (await runtime.prompt.build(speaker="bob@example.com")).identity.text
    log = await conversation(runtime, "chat-1", (None, "I moved to Lyon in May."), user=user)
    runtime.dreamer.backend = ScriptedJSON(
        lambda r: extraction(("about_user", ["L1"], "The user moved to Lyon in May."))
    )
    result = await runtime.dreamer.run("test")
    assert result.processed == [log], result.reason
    kept = await runtime.memories.get(Kind.PROFILE, "alice-example.com")
    assert "Alice bakes." in kept.body and "Lyon" in kept.body
    assert not await runtime.memories.exists(Kind.PROFILE, name_for(user))


async def test_a_user_whose_id_differs_only_in_case_writes_no_one_else_s_profile(
    runtime: Runtime,
) -> None:
    await runtime.memories.create(Kind.PROFILE, "alice", description="d", body="- Alice bakes.")
    log = await conversation(runtime, "chat-1", (None, "I am allergic to peanuts."), user="ALICE")
    runtime.dreamer.backend = ScriptedJSON(
        lambda r: extraction(("about_user", ["L1"], "The user is allergic to peanuts."))
    )
    result = await runtime.dreamer.run("test")
    # It retried five times ("kept changing") and ended the dream in error.
    assert (result.status, result.processed) == ("deep_sleep", [log]), result.reason
    assert result.candidates["unwritable"] == 1
    assert (await runtime.memories.get(Kind.PROFILE, "alice")).body.strip() == "- Alice bakes."


async def test_a_person_s_entry_made_by_hand_in_another_case_is_added_to(
    runtime: Runtime,
) -> None:
    await runtime.memories.create(
        Kind.KNOWLEDGE, "About-Wendy", description="notes on wendy", body="Wendy is a colleague."
    )
    log = await conversation(
        runtime, "chat-1", ("Wendy", "I started learning the cello last week."), ("Max", "Nice!")
    )
    runtime.dreamer.backend = ScriptedJSON(
        lambda r: extraction(("fact", ["L1"], "Wendy started learning the cello."))
    )
    result = await runtime.dreamer.run("test")
    assert (result.status, result.processed) == ("deep_sleep", [log]), result.reason
    assert set(knowledge(runtime)) == {"About-Wendy"}
    assert "cello" in knowledge(runtime)["About-Wendy"].body


async def test_people_whose_names_make_no_name_keep_entries_of_their_own(
    runtime: Runtime,
) -> None:
    # They all went into one entry, `about-person`, "What is known of R2/D2".
    said = {
        "R2/D2": ("I repaired the hyperdrive on Tuesday.", "R2/D2 repaired the hyperdrive."),
        "C3/PO": ("I speak six million languages.", "C3/PO speaks six million languages."),
        "Ann 🌸": ("I grow tomatoes on my balcony.", "Ann 🌸 grows tomatoes on her balcony."),
    }
    for number, (person, (line, _)) in enumerate(said.items()):
        await conversation(runtime, f"chat-{number}", (person, line), ("Max", "Nice!"))
    answers = iter([extraction(("fact", ["L1"], memory)) for _, memory in said.values()])
    runtime.dreamer.backend = ScriptedJSON(lambda r: next(answers))
    result = await runtime.dreamer.run("test")
    assert result.status == "deep_sleep" and len(result.processed) == 3, result.reason
    about = {doc.meta["about"]: doc.body for doc in knowledge(runtime).values()}
    assert set(about) == {"R2/D2", "C3/PO", "Ann 🌸"}
    assert "hyperdrive" in about["R2/D2"] and "languages" not in about["R2/D2"]


@pytest.mark.parametrize(
    "answer",
    [
        '{"memories": [{"evidence": [1], "kind": "fact", "text": "Bob moved to Lyon'
        '\\ud800 in May.\\u0000\\ufeff"}]}',
        '{"memories": [{"evidence": [1], "kind": "fact", "text": "Bob moved to Lyon \\udc00 '
        'in May."}]}',
        # what is left of the escape is kept
        '{"memories": [{"evidence": [1], "kind": "fact", "text": "Bob moved to Lyon \\ud800 '
        'in May.\\u001b[31m"}]}',
    ],
)
async def test_a_lone_surrogate_or_a_control_in_an_answer_is_no_error(
    runtime: Runtime, answer: str
) -> None:
    log = await conversation(runtime, "chat-1", ("Bob", "I moved to Lyon in May."))
    seen: list[dict[str, Any]] = []
    runtime.dreamer.backend = ScriptedJSON(lambda r: answer)
    async with runtime.dreamer.events.subscribe() as queue:
        result = await runtime.dreamer.run("test")
        while not queue.empty():
            seen.append(queue.get_nowait())
    # The entry could not be written (not valid YAML), the decision request not be sent:
    # the dream ended in error, every time, and the event stream broke on the candidate.
    assert (result.status, result.processed) == ("deep_sleep", [log]), result.reason
    assert result.candidates["added"] == 1
    written = "".join(p.read_text() for p in runtime.layout.root.glob("**/*.md"))
    assert "Bob moved to Lyon in May." in written
    assert not any(ch in written for ch in "\x00\x1b\ufeff")
    candidate = next(event for event in seen if event.get("type") == "candidate")
    json.dumps(candidate, ensure_ascii=False).encode()  # UTF-8 carries it


async def test_a_number_too_long_to_read_is_a_failed_stage(runtime: Runtime) -> None:
    log = await conversation(runtime, "chat-1", ("Bob", "I moved to Lyon in May."))
    long = '{"memories": [{"evidence": [' + "9" * 5000 + '], "kind": "fact", "text": "x"}]}'
    answers = iter([long, long, extraction(("fact", ["L1"], "Bob moved to Lyon in May."))])
    runtime.dreamer.backend = ScriptedJSON(lambda r: next(answers))
    result = await runtime.dreamer.run("test")
    # ValueError: "Exceeds the limit (4300 digits)" ended the dream in error.
    assert (result.status, result.failed_stages) == ("interrupted", 1), result.reason
    assert result.reason.startswith("no_log_processed")
    result = await runtime.dreamer.run("test")
    assert (result.status, result.processed) == ("deep_sleep", [log])


async def test_a_session_marked_never_to_be_dreamed_meanwhile_is_not_written(
    runtime: Runtime,
) -> None:
    log = await conversation(
        runtime, "private-1", ("Uma", "My appointment at the oncology ward is on Monday.")
    )
    llm = ScriptedJSON(
        lambda r: extraction(("plan", ["L1"], "Uma has an appointment on Monday.")),
        before=lambda: runtime.sessions.mark_no_dream("private-1"),  # while the model is asked
    )
    runtime.dreamer.backend = llm
    result = await runtime.dreamer.run("test")
    # The answer was written, and the log archived as processed.
    assert result.processed == [] and knowledge(runtime) == {}
    assert not list((runtime.layout.root / "memory/episodes").glob("*/SKILL.md"))
    assert not list((runtime.layout.root / "memory/intentions").glob("*/INTENT.md"))
    result = await runtime.dreamer.run("test")  # the next sleep archives it unread
    assert result.skipped_logs == [log] and llm.requests and len(llm.requests) == 1


async def test_a_second_cancel_while_a_dream_finishes_keeps_its_result(
    runtime: Runtime,
) -> None:
    log = await conversation(runtime, "chat-1", ("Bob", "I moved to Lyon in May."))
    runtime.dreamer.backend = ScriptedJSON(
        lambda r: extraction(("fact", ["L1"], "Bob moved to Lyon in May."))
    )
    entered, release = asyncio.Event(), asyncio.Event()
    committed: list[DreamRecord] = []

    async def slow_commit(record: DreamRecord) -> None:  # history's hook, held
        entered.set()
        await release.wait()
        committed.append(record)

    runtime.dreamer.on_finished.insert(0, slow_commit)
    async with runtime.dreamer.events.subscribe() as queue:
        started, task = runtime.dreamer.start("test")
        assert started and task is not None
        await entered.wait()
        for _ in range(3):  # cancels (an agent starting, from several hosts) as it finishes
            task.cancel()
            await asyncio.sleep(0)
        release.set()
        result = await runtime.dreamer.outcome(task, "test")
        events = []
        while not queue.empty():
            events.append(queue.get_nowait())
    # The waiting client got a made-up "interrupted", the status the dream before it, no
    # `finished` event went out and history never committed the dream.
    assert (result.status, result.processed) == ("deep_sleep", [log])
    assert committed and committed[0].processed == (log,)
    assert runtime.dreamer.last is result and not runtime.dreamer.sleeping
    assert events[-1]["type"] == "finished" and events[-1]["status"] == "deep_sleep"


async def test_a_secret_in_a_failure_and_a_line_break_in_a_trigger_are_not_kept(
    runtime: Runtime,
) -> None:
    await conversation(runtime, "chat-1", ("Bob", "I moved to Lyon in May."))

    def refuse(request: object) -> str:
        raise LLMRejected("HTTP 401: Incorrect API key provided: sk-proj-" + "Ab12" * 10)

    runtime.dreamer.backend = ScriptedJSON(refuse)
    result = await runtime.dreamer.run("cli\n\nDream-Id: forged")
    # The key went to the status, the journal and history's commit message; the trigger's
    # line break made a trailer of its own there.
    assert result.status == "interrupted" and "Incorrect API key" in result.reason
    assert "Ab12Ab12" not in result.reason and result.trigger == "cli Dream-Id: forged"
    assert result.journal is not None
    journal = (runtime.layout.root / result.journal).read_text()
    assert "Ab12Ab12" not in journal and "\nDream-Id: forged" not in journal
