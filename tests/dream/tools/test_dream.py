"""The dream's own tools (decay once, notes, journals of earlier dreams, profiles), the schema
the loop hands to the model, validated calls, and the ledger a dream leaves behind."""

from __future__ import annotations

import ast
import datetime as dt
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import somnid.dream
from somnid.config import Settings
from somnid.dream.ledger import ItemRef, Ledger
from somnid.dream.tools import TOOL_NAMES, DreamTools
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from somnid.store import frontmatter
from tests.dream.tools import START, dreaming, make_log

Env = tuple[Runtime, DreamTools]


@pytest.fixture
async def env(settings: Settings, clock: ManualClock) -> AsyncIterator[Env]:
    async with dreaming(settings, clock) as pair:
        yield pair


# ---------------------------------------------------------------------- decay


async def test_decay_runs_once_per_dream(settings: Settings) -> None:
    clock = ManualClock(START)
    async with dreaming(settings, clock) as (_, tools):
        await tools.create_knowledge("fading", "fact", "Will fade", "b", verified=False)
        await tools.create_knowledge("lasting", "fact", "Will last", "b")
        clock.advance(dt.timedelta(days=4))  # unverified knowledge retires after 4 days
        first = await tools.decay_all_knowledge()
        assert first.startswith("decay for 2026-10-07: 2 entries lost activation")
        assert "retired into the archive (score below the floor): knowledge fading" in first
        report = tools.ledger.decay
        assert report is not None and [c.name for c in report.retired] == ["fading"]
        clock.advance(dt.timedelta(days=3))
        second = await tools.decay_all_knowledge()
        assert second == "decay already ran in this dream:\n" + first
        assert tools.ledger.decay is report

        tools.bind(Ledger())  # the next dream
        third = await tools.decay_all_knowledge()
        assert third.startswith("decay for 2026-10-10: 1 entries lost activation")
        assert tools.ledger.decay is not report


# ---------------------------------------------------------------------- notes and history


async def test_dream_notes_are_kept_in_the_ledger_not_written(env: Env) -> None:
    rt, tools = env
    answer = await tools.write_dream_log("## Changes\n- merged two deploy notes")
    assert answer == "noted 36 characters for the dream journal"
    fenced = await tools.write_dream_log("---\ndream_id: x\n---\n\nLoosen episode extraction.")
    assert fenced.endswith("(front-matter left out: somnid writes the header)")
    assert tools.ledger.notes == [
        "## Changes\n- merged two deploy notes",
        "Loosen episode extraction.",
    ]
    assert list(rt.layout.dream_log_dir.iterdir()) == []
    assert (await tools.write_dream_log("  ")).startswith("error: content is empty")
    assert (await tools.write_dream_log("x" * 30_000)).startswith("error: notes would exceed")


async def test_review_dream_history_reads_the_newest_journals_by_name(env: Env) -> None:
    rt, tools = env
    assert await tools.review_dream_history() == "no dream journal yet: this is the first dream"
    folder = rt.layout.dream_log_dir
    for name in (
        "2026-10-01_dream_001.md",
        "2026-10-02_dream_009.md",
        "2026-10-02_dream_010.md",
        "2026-09-30_dream_001.md",
    ):
        (folder / name).write_text(f"---\ndream_id: {name[:-3]}\n---\n\nbody of {name}\n", "utf-8")
    (folder / "notes.md").write_text("not a journal\n", "utf-8")
    outside = rt.layout.root.parent / "secret.md"
    outside.write_text("SECRET\n", "utf-8")
    os.symlink(outside, folder / "2026-12-31_dream_001.md")

    answer = await tools.review_dream_history(limit=2)
    assert answer.startswith("4 dream journals; the latest 2, newest first:")
    assert answer.index("## 2026-10-02_dream_010") < answer.index("## 2026-10-02_dream_009")
    assert "body of 2026-10-01" not in answer
    assert "SECRET" not in answer and "not a journal" not in answer
    everything = await tools.review_dream_history(limit=50)
    assert everything.startswith("4 dream journals; the latest 4")


async def test_long_journals_are_cut_to_the_budget(settings: Settings) -> None:
    async with dreaming(settings, history_tokens=400) as (rt, tools):
        (rt.layout.dream_log_dir / "2026-10-01_dream_001.md").write_text("梦" * 5000, "utf-8")
        answer = await tools.review_dream_history(limit=1)
        assert answer.endswith("\n…(cut)")
        assert answer.count("梦") <= 400


# ---------------------------------------------------------------------- profiles


@pytest.mark.parametrize(
    "content",
    [
        "我是一个记忆管理助手，负责从 session-log 中提取记忆。",
        "我在睡眠过程中整理对话。",
        "I am the Sleep Agent.",
        "I consolidate memories from the session logs while the agent is idle.",
        "A memory-management  assistant that extracts memories.",
    ],
)
async def test_about_me_refuses_the_dreamers_own_role(env: Env, content: str) -> None:
    rt, tools = env
    answer = await tools.update_about_me(content)
    assert answer.startswith("error: about_me must describe the agent as its users know it")
    assert not rt.layout.entry_file(Kind.PROFILE, "about_me").exists()
    assert tools.ledger.profiles == []


async def test_about_me_is_written_and_rewritten_keeping_its_keys(settings: Settings) -> None:
    async with dreaming(settings, lang="zh") as (rt, tools):
        path = rt.layout.entry_file(Kind.PROFILE, "about_me")
        answer = await tools.update_about_me("我是一个乐于助人的编码助手，回答简洁，先给结论。")
        assert answer == "updated about_me (24 characters)"
        doc = frontmatter.parse(path.read_text("utf-8"))
        assert doc.meta["description"] == "智能体的自我认知与人格画像"
        assert doc.meta["type"] == "identity"
        assert doc.body == "我是一个乐于助人的编码助手，回答简洁，先给结论。\n"
        path.write_text(path.read_text("utf-8").replace("---\n\n", "mood: calm\n---\n\n", 1))
        # It carries every word of the old line but one ("回答简洁"): that line is kept.
        rewrite = (
            "我是一个乐于助人的编码助手，先给结论。I answer in English when spoken to in English."
        )
        answer = await tools.update_about_me(rewrite)
        assert answer.endswith(
            "(65 characters); 1 line of the old profile your text leaves out"
            " was kept below it (a dream never removes a line: a person does)"
        )
        doc = frontmatter.parse(path.read_text("utf-8"))
        assert doc.meta["mood"] == "calm"
        assert doc.body == f"{rewrite}\n\n我是一个乐于助人的编码助手，回答简洁，先给结论。\n"
        await tools.update_about_me(f"{rewrite}我是一个乐于助人的编码助手，回答简洁，先给结论。")
        doc = frontmatter.parse(path.read_text("utf-8"))
        assert (
            doc.body == f"{rewrite}我是一个乐于助人的编码助手，回答简洁，先给结论。\n"
        )  # all carried
        assert tools.ledger.profiles == ["about_me (memory/about_me.md)"]


async def test_user_profiles_are_created_or_updated(env: Env, clock: ManualClock) -> None:
    rt, tools = env
    refused = await tools.update_about_user("ou_7f3a", "Alice runs the release train.")
    assert refused.startswith("error: read a log first")  # whose facts, if no log was read?
    stem = await make_log(rt, "chat-ou", "I run the release train.", user="ou_7f3a")
    assert "error" not in (await tools.read_session_log(stem))[:20]
    answer = await tools.update_about_user("ou_7f3a", "Alice runs the release train.")
    assert answer == "updated the profile of user ou_7f3a (29 characters)"
    path = rt.layout.root / "memory/users/ou_7f3a/about_user.md"
    doc = frontmatter.parse(path.read_text("utf-8"))
    assert (doc.meta["user_id"], doc.meta["type"]) == ("ou_7f3a", "identity")
    assert doc.meta["description"] == "Profile of user ou_7f3a"
    clock.advance(dt.timedelta(days=1))
    await tools.update_about_user("ou_7f3a", "Alice runs the release train. Prefers English.")
    doc = frontmatter.parse(path.read_text("utf-8"))
    assert doc.body == "Alice runs the release train. Prefers English.\n"
    assert str(doc.meta["updated"]).startswith("2026-10-04")
    assert tools.ledger.profiles == ["user ou_7f3a (memory/users/ou_7f3a/about_user.md)"]
    refused = await tools.update_about_user("about_me", "I am a user")
    assert refused.startswith("error: about_me is the agent's own profile")
    assert (await tools.update_about_user("../x", "text")).startswith("error:")
    assert (await tools.update_about_user("ou_7f3a", "")).startswith("error: content is empty")
    # Issue 12: the agent's self-description went into user default for a log of caroline.
    for other in ("bob", "default"):
        refused = await tools.update_about_user(other, "The agent is a consolidation process.")
        assert refused.startswith(f"error: user {other!r} is not the user of a log read"), refused
        assert "the logs read are about: ou_7f3a" in refused
        assert not (rt.layout.root / f"memory/users/{other}/about_user.md").exists()
    assert (await tools.update_about_user("", "Prefers English.")).startswith("updated")


async def test_a_rewrite_never_drops_a_line_of_the_profile(env: Env) -> None:
    """A small model's "whole new profile" is often only the new fact: the lines it leaves
    out (a person's notes among them) stay, below the new text (the prompt shows the top);
    a line of no content word stays unless the new text has it as written."""
    rt, tools = env
    await tools.read_session_log(await make_log(rt, "chat-pia", "I moved to Lyon.", user="pia"))
    path = rt.layout.root / "memory/users/pia/about_user.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        "---\nname: Pia\ndescription: Pia, by hand\n---\n\n# Pia\n\nIs a PM.\n"
        "Does not eat meat.\n\n## Exceptions\n- Fish on Fridays\n- Lives in Berlin\n"
    )
    answer = await tools.update_about_user(
        "pia", "# Pia\n\n- Eats meat.\n- Fish on Fridays\n- Lives in Lyon (since 2026)"
    )
    assert answer.endswith(
        "; 4 lines of the old profile your text leaves out were kept below it"
        " (a dream never removes a line: a person does)"
    ), answer
    body = frontmatter.parse(path.read_text("utf-8")).body
    assert body == (
        "# Pia\n\n- Eats meat.\n- Fish on Fridays\n- Lives in Lyon (since 2026)\n\n"
        "Is a PM.\nDoes not eat meat.\n## Exceptions\n- Lives in Berlin\n"
    )
    again = await tools.update_about_user("pia", body.rstrip("\n"))  # all carried: as it is
    assert "were kept" not in again
    assert frontmatter.parse(path.read_text("utf-8")).body == body
    grown = path.read_text("utf-8") + "".join(f"- note {i} " + "x" * 80 + "\n" for i in range(400))
    path.write_text(grown)  # a person's 36,000 characters of notes
    too_long = await tools.update_about_user("pia", "Likes tea.")
    assert too_long.startswith("error: with the 408 lines of the profile your text leaves out")
    assert "a person must tidy it" in too_long
    assert path.read_text("utf-8") == grown


async def test_the_legacy_default_profile_is_kept_and_superseded(original_data_dir: Path) -> None:
    settings = Settings(data_dir=original_data_dir, timezone="UTC", embed={"provider": "off"})
    legacy = original_data_dir / "memory/about_user.md"
    before = legacy.read_bytes()
    async with dreaming(settings) as (rt, tools):
        await tools.read_session_log(await make_log(rt, "s", "我主要写 Python。"))
        answer = await tools.update_about_user("default", "喜欢简洁的回答；主要写 Python。")
        assert answer.startswith("updated"), answer
    assert legacy.read_bytes() == before
    doc = frontmatter.parse((original_data_dir / "memory/users/default/about_user.md").read_text())
    assert doc.meta["name"] == "老王"  # the legacy file's keys carried over
    # The rewrite left TypeScript out: the legacy line is kept below it.
    assert (
        doc.body
        == "喜欢简洁的回答；主要写 Python。\n\n喜欢简洁的回答；主要写 Python 和 TypeScript。\n"
    )


# ---------------------------------------------------------------------- schema and calls


async def test_specs_are_the_openai_tools_array(env: Env) -> None:
    _, tools = env
    specs = tools.specs()
    assert [spec["function"]["name"] for spec in specs] == list(TOOL_NAMES)
    assert len(specs) == 17  # the original's 15, find_similar, create_intention
    for spec in specs:
        assert spec["type"] == "function"
        function = spec["function"]
        assert function["description"] and "Args" not in function["description"]
        params = function["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        for name, prop in params["properties"].items():
            assert prop.get("description"), (function["name"], name)
    by_name = {spec["function"]["name"]: spec["function"]["parameters"] for spec in specs}
    assert by_name["create_knowledge"]["required"] == ["name", "entry_type", "description", "body"]
    assert by_name["record_episode"]["properties"]["salience"]["default"] == "low"
    assert by_name["decay_all_knowledge"]["properties"] == {}
    specs[0]["function"]["name"] = "changed"
    assert tools.specs()[0]["function"]["name"] == "read_session_log"


async def test_call_validates_arguments_and_names_the_field(env: Env) -> None:
    _, tools = env
    unknown = await tools.call("delete_everything", {})
    assert unknown.startswith("error: unknown tool 'delete_everything'; the closest tool is ")
    assert "The tools are: read_session_log, " in unknown
    # A near miss is answered with the tool it meant and that tool's arguments.
    near = await tools.call("mark_log_processd", {"log": "x"})
    assert near.startswith(
        "error: unknown tool 'mark_log_processd'; the closest tool is mark_log_processed, "
        'whose arguments have this JSON schema: {"type": "object", "properties": {"log": '
    ), near
    missing = await tools.call("create_knowledge", {"name": "x"})
    assert missing.startswith("error: invalid arguments for create_knowledge: entry_type:")
    wrong = await tools.call("list_items", {"limit": "many"})
    assert wrong.startswith("error: invalid arguments for list_items: limit:")
    extra = await tools.call("read_item", {"kind": "knowledge", "name": "x", "path": "/etc"})
    assert extra.startswith("error: invalid arguments for read_item: path:")
    not_object = await tools.call("list_items", ["x"])  # type: ignore[arg-type]
    assert not_object == "error: the arguments of list_items must be a JSON object"
    created = await tools.call(
        "create_knowledge",
        {"name": "k", "entry_type": "fact", "description": "d", "body": "b", "verified": "false"},
    )
    assert "unverified until confirmed" in created
    assert (await tools.call("list_items", {"limit": "5"})).startswith("1 of 1 entries")


async def test_the_ledger_after_a_dream(env: Env) -> None:
    rt, tools = env
    ledger = Ledger()
    tools.bind(ledger)
    stem = await make_log(rt, "chat-1", "Deploys are Tuesday to Thursday now.", "Noted.")
    calls: list[tuple[str, dict[str, object]]] = [
        ("review_dream_history", {}),
        ("read_session_log", {"log": stem}),
        ("find_similar", {"text": "deploy days"}),
        ("create_knowledge", {"name": "deploy-days", "entry_type": "decision",
                              "description": "Deploys happen Tuesday to Thursday", "body": "b"}),
        ("create_skill", {"name": "old-way", "description": "The old way", "body": "1."}),
        ("update_knowledge", {"name": "deploy-days", "stability_delta": 1}),
        ("record_episode", {"what": "User changed the deploy days", "source": stem}),
        ("archive_item", {"kind": "skill", "name": "old-way", "reason": "replaced"}),
        ("update_about_user", {"user_id": "default", "content": "Runs deploys."}),
        ("mark_log_processed", {"log": stem}),
        ("decay_all_knowledge", {}),
        ("write_dream_log", {"content": "One decision, one episode."}),
    ]  # fmt: skip
    for name, args in calls:
        answer = await tools.call(name, args)
        assert not answer.startswith("error:"), (name, answer)
    assert ledger.created == [
        ItemRef(Kind.KNOWLEDGE, "deploy-days", "memory/knowledge/deploy-days/SKILL.md"),
        ItemRef(Kind.SKILL, "old-way", "skills/agent_learned_skills/old-way/SKILL.md"),
        ItemRef(Kind.EPISODE, "ep-20261003-120000", "memory/episodes/ep-20261003-120000/SKILL.md"),
    ]
    assert ledger.updated == []  # updated only what this dream created
    assert ledger.archived == [
        ItemRef(Kind.SKILL, "old-way", "skills/archived/agent_learned_skills/old-way/SKILL.md")
    ]
    assert ledger.processed_logs == [stem]
    assert ledger.profiles == ["user default (memory/users/default/about_user.md)"]
    assert ledger.decay is not None
    assert ledger.notes == ["One decision, one episode."]
    for kind, name, path in ledger.created:  # what the journal writer unpacks
        assert f"{kind} {name} ({path})".startswith(kind.value)
    episode = frontmatter.parse(
        (rt.layout.root / "memory/episodes/ep-20261003-120000/SKILL.md").read_text("utf-8")
    )
    assert episode.meta["source"] == stem


def test_answers_only_name_tools_that_exist() -> None:
    """The original's answers pointed to a tool that did not exist (view_text_file)."""
    tool_like = re.compile(
        r"\b(?:read|list|find|create|update|archive|record|mark|review|decay|write)_[a-z_]+\b"
    )
    folder = Path(somnid.dream.__file__).parent
    named: set[str] = set()
    for module in ("tools", "log_tools", "entry_tools", "edits", "items", "logfiles"):
        tree = ast.parse((folder / f"{module}.py").read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named.update(tool_like.findall(node.value))
    assert named - {"archive_reason"} <= set(TOOL_NAMES)
    assert {"update_knowledge", "read_session_log", "mark_log_processed"} <= named


async def test_an_open_intention_is_not_created_twice(env: Env) -> None:
    """The 1.5B model, made to call tools, created the same intention seven times in one
    dream (each call "worked", so nothing stopped it): the second is refused, as an error
    the stuck detector counts."""
    _, tools = env
    tools.bind(Ledger())
    args = {"what": "Renew the TLS certificate of the mail server", "due": "2026-10-20"}
    first = await tools.call("create_intention", args)
    assert first.startswith("created intention "), first
    again = await tools.call("create_intention", dict(args, cue="tls"))
    assert again.startswith("error: open intention ") and "nothing was created" in again
    other = await tools.call("create_intention", {"what": "Water the office plants"})
    assert other.startswith("created intention "), other
    assert [i.what for i in await tools.intentions.open()] == [
        "Renew the TLS certificate of the mail server",
        "Water the office plants",
    ]
    # Once the first is done, asking for it again is a new intention.
    await tools.intentions.complete(first.split()[2].rstrip(":"))
    assert (await tools.call("create_intention", args)).startswith("created intention ")


async def test_a_count_out_of_range_is_taken_to_its_end_never_a_lost_round(env: Env) -> None:
    # Counts are checked against their range now; a small model asking a dream's tool for
    # 500 should not have the call refused (refusals count towards a stuck dream).
    _, tools = env
    schema = next(s for s in tools.specs() if s["function"]["name"] == "find_similar")
    assert schema["function"]["parameters"]["properties"]["limit"]["maximum"] == 20
    answer = await tools.call("find_similar", {"text": "deploy window", "limit": 500})
    assert not answer.startswith("error"), answer
    refused = await tools.call("find_similar", {"text": "deploy window", "limit": True})
    assert refused.startswith("error"), refused
