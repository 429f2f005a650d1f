"""Memories in a dream: find, read, create, update, archive, record episodes. Names are safe
slugs, existing names are refused with a hint, the archive never overwrites, and every file
written is Markdown a person can read."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from somnid.config import Settings
from somnid.dream.ledger import ItemRef
from somnid.dream.tools import DreamTools
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime
from somnid.store import frontmatter
from tests.dream.tools import dreaming

Env = tuple[Runtime, DreamTools]


@pytest.fixture
async def env(settings: Settings, clock: ManualClock) -> AsyncIterator[Env]:
    async with dreaming(settings, clock) as pair:
        yield pair


def read(rt: Runtime, rel: str) -> frontmatter.Document:
    return frontmatter.parse((rt.layout.root / rel).read_text("utf-8"))


async def test_create_knowledge_writes_a_readable_file(env: Env) -> None:
    rt, tools = env
    answer = await tools.create_knowledge(
        "Deploy Window",
        "Decision",
        'Deploys happen "only" Tuesday to Thursday\nbetween 10:00 and 16:00: team rule',
        "Mondays and Fridays are frozen.\n\n- ticket: OPS-12",
    )
    assert answer == (
        "created knowledge 'Deploy-Window' (type decision, score 0.50, verified) at "
        "memory/knowledge/Deploy-Window/SKILL.md"
    )
    text = (rt.layout.root / "memory/knowledge/Deploy-Window/SKILL.md").read_text("utf-8")
    assert text.startswith("---\nname: Deploy-Window\ndescription: ")
    doc = frontmatter.parse(text)
    assert doc.meta["description"] == (
        'Deploys happen "only" Tuesday to Thursday between 10:00 and 16:00: team rule'
    )
    assert doc.meta["type"] == "decision"
    assert doc.meta["score"] == 0.5
    assert "verified" not in doc.meta
    assert doc.body == "Mondays and Fridays are frozen.\n\n- ticket: OPS-12\n"
    assert tools.ledger.created == [
        ItemRef(Kind.KNOWLEDGE, "Deploy-Window", "memory/knowledge/Deploy-Window/SKILL.md")
    ]


async def test_unverified_knowledge_starts_weaker_and_says_so_in_its_front_matter(
    env: Env,
) -> None:
    rt, tools = env
    answer = await tools.create_knowledge("gpu-quota", "fact", "The GPU quota is 4", "", False)
    assert "score 0.30, unverified until confirmed" in answer
    doc = read(rt, "memory/knowledge/gpu-quota/SKILL.md")
    assert doc.meta["verified"] is False
    assert doc.meta["score"] == 0.3
    assert doc.body == ""  # no banner: the front-matter says it
    confirmed = await tools.update_knowledge("gpu-quota", score_delta=0.2, verified=True)
    assert confirmed == "updated knowledge 'gpu-quota': score 0.30→0.50, now verified"
    assert "verified" not in read(rt, "memory/knowledge/gpu-quota/SKILL.md").meta


async def test_existing_names_are_refused_with_a_pointer_to_the_update_tool(env: Env) -> None:
    rt, tools = env
    await tools.create_knowledge("deploy-window", "fact", "Deploys Tuesday to Thursday", "v1")
    again = await tools.create_knowledge("deploy window", "fact", "Another", "v2")
    assert again == (
        "error: a knowledge named 'deploy-window' exists already; change it with "
        'update_knowledge(name="deploy-window", …) or choose another name'
    )
    await tools.create_skill("release", "How to release", "1. tag")
    skill = await tools.create_skill("release", "How to release", "1. tag")
    assert 'update_skill(name="release", …)' in skill
    assert read(rt, "memory/knowledge/deploy-window/SKILL.md").body == "v1\n"
    assert len(tools.ledger.created) == 2


@pytest.mark.parametrize(
    "name", ["../escape", "a/b", "..\\x", "/etc/passwd", "..", "archived", "CON", "nul.txt", ""]
)
async def test_names_that_are_paths_or_reserved_are_refused(env: Env, name: str) -> None:
    rt, tools = env
    answers = [
        await tools.create_knowledge(name, "fact", "d", "b"),
        await tools.create_skill(name, "d", "b"),
        await tools.update_knowledge(name, body="b"),
        await tools.read_item("knowledge", name),
        await tools.archive_item("knowledge", name, "r"),
    ]
    assert all(answer.startswith("error:") for answer in answers), answers
    assert not (rt.layout.root / "escape").exists()
    assert sorted(p.name for p in rt.layout.kind_dir(Kind.KNOWLEDGE).iterdir()) == []
    assert tools.ledger.created == []


async def test_archived_names_can_be_reused_and_the_archive_never_overwrites(env: Env) -> None:
    rt, tools = env
    await tools.create_knowledge("fact", "fact", "First version", "one")
    first = await tools.archive_item("knowledge", "fact", "turned out wrong")
    assert first == (
        "archived knowledge 'fact' to memory/archived/fact/SKILL.md (reason: turned out wrong)"
    )
    assert (await tools.create_knowledge("fact", "fact", "Second version", "two")).startswith(
        "created"
    )
    second = await tools.archive_item("knowledge", "fact", "obsolete")
    assert "memory/archived/fact--2/SKILL.md" in second
    assert read(rt, "memory/archived/fact/SKILL.md").body == "one\n"
    older = read(rt, "memory/archived/fact--2/SKILL.md")
    assert older.body == "two\n"
    assert older.meta["archive_reason"] == "obsolete"
    assert [ref.path for ref in tools.ledger.archived] == [
        "memory/archived/fact/SKILL.md",
        "memory/archived/fact--2/SKILL.md",
    ]
    assert [ref.name for ref in tools.ledger.archived] == ["fact", "fact"]
    missing = await tools.archive_item("knowledge", "fact", "again")
    assert missing == "error: knowledge 'fact' is archived; archived entries are not changed"
    assert (await tools.archive_item("profile", "about_me", "no")).startswith("error: kind must")


async def test_update_knowledge_moves_the_numbers_within_bounds(
    env: Env, clock: ManualClock
) -> None:
    rt, tools = env
    await tools.create_knowledge("k", "fact", "A fact", "old body")
    clock.advance(dt.timedelta(days=1))
    answer = await tools.update_knowledge(
        "k", description="A better fact", body="new body", stability_delta=1, score_delta=0.7
    )
    assert answer == ("updated knowledge 'k': description, body, stability 0→1, score 0.50→1.00")
    doc = read(rt, "memory/knowledge/k/SKILL.md")
    assert (doc.meta["description"], doc.body, doc.meta["stability"], doc.meta["score"]) == (
        "A better fact",
        "new body\n",
        1,
        1.0,
    )
    assert str(doc.meta["last_used"]).startswith("2026-10-04")  # a use: stability went up
    down = await tools.update_knowledge("k", stability_delta=-5, score_delta=-1.0)
    assert down == "updated knowledge 'k': stability 1→0, score 1.00→0.00"
    assert (await tools.update_knowledge("k")).startswith("error: nothing to change")
    assert (await tools.update_knowledge("k", score_delta=3.0)).startswith("error: score_delta")
    # Created this dream: listed once, under created.
    assert [ref.name for ref in tools.ledger.created] == ["k"]
    assert tools.ledger.updated == []


async def test_updates_point_to_the_right_kind_when_the_name_is_elsewhere(env: Env) -> None:
    _, tools = env
    await tools.create_skill("release-checklist", "How to release", "1. tag")
    answer = await tools.update_knowledge("release-checklist", body="x")
    assert answer == (
        "error: no knowledge named 'release-checklist', but a skill has that name "
        "(use kind=skill or the skill tools)"
    )
    nothing = await tools.update_skill("nope", body="x")
    assert nothing.startswith("error: no skill named 'nope'; find names with find_similar")


async def test_update_skill_merges_respects_auto_merge_and_keeps_the_note(env: Env) -> None:
    rt, tools = env
    await tools.create_skill("deploy", "How to deploy", "1. build\n2. push", verified=False)
    answer = await tools.update_skill(
        "deploy",
        body="1. build\n2. push\n\n⚠️ push needs the VPN",
        merge_note="added the VPN gotcha from 2026-10-02_001",
        stability_delta=1,
        verified=True,
    )
    assert answer.startswith("updated skill 'deploy': body, stability 0→1, now verified")
    assert tools.ledger.notes == ["skill deploy: added the VPN gotcha from 2026-10-02_001"]
    doc = read(rt, "skills/agent_learned_skills/deploy/SKILL.md")
    assert doc.body.endswith("⚠️ push needs the VPN\n")
    assert doc.meta["type"] == "skill"

    kept = rt.layout.kind_dir(Kind.SKILL) / "hand-kept" / "SKILL.md"
    kept.parent.mkdir(parents=True)
    kept.write_text("---\nname: hand-kept\nauto_merge: false\n---\n\nMine.\n", "utf-8")
    refused = await tools.update_skill("hand-kept", body="Theirs.")
    assert refused.startswith("error: skill 'hand-kept' has auto_merge: false")
    assert kept.read_text("utf-8").endswith("Mine.\n")


async def test_knowledge_a_person_keeps_is_neither_changed_nor_archived(env: Env) -> None:
    # A probe: auto_merge: false held for skills only; an agentic dream rewrote and
    # archived knowledge a person had marked so.
    rt, tools = env
    kept = rt.layout.kind_dir(Kind.KNOWLEDGE) / "kept-fact" / "SKILL.md"
    kept.parent.mkdir(parents=True)
    kept.write_text("---\nname: kept-fact\nauto_merge: false\n---\n\nMine.\n", "utf-8")
    refused = await tools.update_knowledge("kept-fact", body="Theirs.")
    assert refused.startswith("error: knowledge 'kept-fact' has auto_merge: false")
    refused = await tools.archive_item("knowledge", "kept-fact", "obsolete")
    assert refused.startswith("error: knowledge 'kept-fact' has auto_merge: false")
    assert kept.read_text("utf-8").endswith("Mine.\n")


async def test_verifying_an_original_entry_removes_its_pending_banner(env: Env) -> None:
    rt, tools = env
    path = rt.layout.kind_dir(Kind.KNOWLEDGE) / "old" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(
        "---\nname: old\nscore: 0.3\n---\n\n> ⚠️ 待验证 (pending verification)\n\nThe fact.\n",
        "utf-8",
    )
    assert "unverified" in await tools.list_items()
    answer = await tools.update_knowledge("old", score_delta=0.2, verified=True)
    assert answer == "updated knowledge 'old': score 0.30→0.50, now verified"
    assert path.read_text("utf-8").endswith("---\n\nThe fact.\n")


async def test_record_episode_fills_the_front_matter_and_names_itself(env: Env) -> None:
    rt, tools = env
    answer = await tools.record_episode(
        "Fixed the CI build for the user",
        when="2026-10-02T09:30",
        actors="Alice, agent",
        outcome="success",
        objects="ci.yml",
        tools="bash, pytest",
        tags="ci， build,,",
        salience="Medium",
        source="/tmp/evil/../../2026-10-02_001",
        details="pytest 8 broke a fixture.",
    )
    assert answer == "recorded episode 'ep-20261003-120000' (salience mid, score 0.60)"
    assert not (rt.layout.root / "tmp").exists()
    doc = read(rt, "memory/episodes/ep-20261003-120000/SKILL.md")
    meta = doc.meta
    assert meta["description"] == "Fixed the CI build for the user"
    assert meta["type"] == "episode"
    assert meta["salience"] == "mid"
    assert str(meta["when"]).startswith("2026-10-02 09:30:00")
    assert meta["actors"] == "Alice, agent"
    assert meta["tags"] == "ci, build"
    assert meta["source"] == "/tmp/evil/../../2026-10-02_001"  # a string, never a path
    assert doc.body == "pytest 8 broke a fixture.\n"
    second = await tools.record_episode("Another thing happened the same second")
    assert second.startswith("recorded episode 'ep-20261003-120000-2' (salience low")
    assert (await tools.record_episode("x", salience="urgent")).startswith("error: salience")
    assert (await tools.record_episode("x", when="last tuesday")).startswith("error: when")
    assert (await tools.record_episode("  ")).startswith("error: what is empty")
    assert [ref.name for ref in tools.ledger.created] == [
        "ep-20261003-120000",
        "ep-20261003-120000-2",
    ]


async def test_descriptions_are_one_sentence(env: Env) -> None:
    _, tools = env
    long = "word " * 80
    answer = await tools.create_knowledge("k", "fact", long, "body")
    assert answer.startswith("error: description has 399 characters")
    assert (await tools.create_knowledge("k", "fact", " ", "body")).startswith(
        "error: description is empty"
    )


async def test_list_read_and_find_similar(env: Env) -> None:
    _, tools = env
    await tools.create_knowledge("deploy-window", "fact", "Deploys Tuesday to Thursday", "b")
    await tools.create_knowledge("venv", "pitfall", "Use the venv python for pip", "b", False)
    await tools.record_episode("Deployed release 1.2 on a Tuesday", salience="high")
    await tools.update_knowledge("deploy-window", score_delta=0.4)

    listing = await tools.list_items()
    lines = listing.splitlines()
    assert lines[0] == "3 of 3 entries, strongest first:"
    assert lines[1].startswith("- [knowledge] deploy-window (type=fact, score=0.90")
    assert lines[1].endswith("— Deploys Tuesday to Thursday")
    assert lines[2].startswith("- [episode] ep-20261003-120000 (type=episode, score=0.80")
    assert "unverified" in lines[3]
    only = await tools.list_items(kind="skills")
    assert only == "no entries"
    capped = await tools.list_items(limit=1)
    assert capped.startswith("1 of 3 entries, strongest first (give a query or a kind")
    found = await tools.list_items(query="deploys tuesday")
    assert found.splitlines()[1].startswith("- [knowledge] deploy-window (match=")
    assert (await tools.list_items(kind="memes")).startswith("error: kind must be one of")

    item = await tools.read_item("knowledge", "deploy-window")
    assert item.startswith("knowledge deploy-window (memory/knowledge/deploy-window/SKILL.md):")
    assert "\n---\nname: deploy-window\n" in item and "score: 0.9" in item
    assert (await tools.read_item("skill", "deploy-window")).startswith(
        "error: no skill named 'deploy-window', but a knowledge has that name"
    )
    assert (await tools.read_item("", "x")).startswith("error: give a kind")

    similar = await tools.find_similar("we deploy on tuesdays", kind="knowledge")
    assert "- [knowledge] deploy-window (match=" in similar
    assert "update it instead of creating" in similar
    nothing = await tools.find_similar("quantum chromodynamics")
    assert nothing == "nothing similar: a new entry is fine"


async def test_the_original_plugins_entries_list_and_read(original_data_dir: Path) -> None:
    settings = Settings(data_dir=original_data_dir, timezone="UTC", embed={"provider": "off"})
    async with dreaming(settings) as (rt, tools):
        await rt.index.wait_idle()
        listing = (await tools.list_items()).splitlines()
        assert listing[0] == "4 of 4 entries, strongest first:"
        assert listing[1].startswith("- [episode] ep-20261001-101500 (type=episode, score=0.80")
        assert "when=2026-10-01 10:15" in listing[1]  # a body bullet line of the original
        assert listing[2].startswith("- [knowledge] python-venv-pitfall (type=experience")
        assert listing[3].startswith("- [skill] release-checklist (type=-, score=0.60")
        assert listing[4].startswith("- [knowledge] deploy-window (type=user, score=0.30")
        assert "unverified" in listing[4]  # the original's banner
        found = await tools.list_items(query="deploys tuesday")
        assert "- [knowledge] deploy-window (match=" in found
        profiles = await tools.list_items(kind="profile")
        assert "- [profile] about_me — 智能体的自我认知与人格画像" in profiles
        assert "- [profile] default" in profiles and "- [profile] ou_7f3a" in profiles
        item = await tools.read_item("knowledge", "deploy-window")
        assert "ticket: 12-34\napplies_when: planning a release\n" in item
        assert (await tools.read_item("knowledge", "old-build-flag")).startswith(
            "error: knowledge 'old-build-flag' is archived"
        )
        await tools.update_knowledge("python-venv-pitfall", stability_delta=1, score_delta=0.1)
        await tools.update_knowledge("python-venv-pitfall", score_delta=0.1)
        assert tools.ledger.updated == [
            ItemRef(
                Kind.KNOWLEDGE,
                "python-venv-pitfall",
                "memory/knowledge/python-venv-pitfall/SKILL.md",
            )
        ]
        doc = frontmatter.parse(
            (original_data_dir / "memory/knowledge/python-venv-pitfall/SKILL.md").read_text()
        )
        assert (doc.meta["stability"], doc.meta["score"]) == (3, 0.94)
        assert doc.meta["related"] == "deploy-window"  # other keys as they were
