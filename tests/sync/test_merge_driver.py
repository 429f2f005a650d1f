"""somnid's merge driver, rule by rule (docs/memory-model.md, "Merging two machines'
memory"), with git's own merge-file for bodies, and as git runs it: a real merge."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from somnid.cli import main
from somnid.store import frontmatter
from somnid.sync.merge import NOTES_ENV, merge_entry
from somnid.sync.remote import redact

BASE = """\
---
description: kites
tags: [wind, paper]
score: 0.5
stability: 1
created: 2026-01-05T10:00:00+00:00
last_used: 2026-01-06T10:00:00+00:00
project: garden
---

line one
line two
line three
"""


def edit(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert old in text
        text = text.replace(old, new)
    return text


def meta_of(text: str) -> dict[str, object]:
    return dict(frontmatter.parse(text).meta)


def test_keys_each_side_changed_are_both_kept() -> None:
    ours = edit(BASE, ("description: kites", "description: kites and wind"))
    theirs = edit(BASE, ("project: garden", "project: park"), ("line three", "line 3"))
    merged = merge_entry(BASE, ours, theirs)
    meta = meta_of(merged.text)
    assert (meta["description"], meta["project"]) == ("kites and wind", "park")
    assert frontmatter.parse(merged.text).body == "line one\nline two\nline 3\n"
    assert not merged.theirs_kept_aside


def test_keys_both_sides_changed() -> None:
    ours = edit(
        BASE,
        ("tags: [wind, paper]", "tags: [wind, paper, string]"),
        ("score: 0.5", "score: 0.7"),
        ("stability: 1", "stability: 3"),
        ("created: 2026-01-05T10:00:00", "created: 2026-01-04T10:00:00"),
    )
    theirs = edit(
        BASE,
        ("tags: [wind, paper]", "tags: [wind, sky]"),  # paper removed, sky added
        ("score: 0.5", "score: 0.4"),
        ("stability: 1", "stability: 2"),
        ("last_used: 2026-01-06T10:00:00", "last_used: 2026-01-08T10:00:00"),
    )
    meta = meta_of(merge_entry(BASE, ours, theirs).text)
    assert meta["tags"] == ["wind", "string", "sky"]  # the union, less what one removed
    assert meta["stability"] == 3  # the larger
    assert str(meta["created"]).startswith("2026-01-04")  # the earlier
    assert str(meta["last_used"]).startswith("2026-01-08")  # the later
    assert meta["score"] == 0.4  # from the side used last (theirs)


def test_a_description_both_sides_rewrote_keeps_both() -> None:
    """A probe: an edit moves no time key, so two rewrites of a description tied, and the
    merging machine's won whichever came later: the other was gone from the memory, said
    nowhere. Ours stays in the entry, theirs goes beside it, as for a body conflict."""
    ours = edit(BASE, ("description: kites", "description: kites, by a"))
    theirs = edit(
        BASE, ("description: kites", "description: kites, by b"), ("score: 0.5", "score: 0.4")
    )
    merged = merge_entry(BASE, ours, theirs)
    assert merged.theirs_kept_aside
    meta = meta_of(merged.text)
    assert (meta["description"], meta["score"]) == ("kites, by a", 0.4)
    same = merge_entry(BASE, ours, ours.replace("line two", "line 2"))  # the same rewrite
    assert not same.theirs_kept_aside


def test_keys_somnid_writes_itself_take_a_side_not_a_conflict() -> None:
    """A review: the clash rule took in every text, so two machines archiving one entry
    for different reasons, or a time written as text, left a conflict no dream settles."""
    archived = BASE.replace(
        "score: 0.5", "score: 0.5\narchive_reason: x\nrestored_at: '2026-01-01'"
    )
    ours = archived.replace("archive_reason: x", "archive_reason: completed").replace(
        "'2026-01-01'", "'2026-02-01'"
    )
    theirs = edit(
        archived.replace("archive_reason: x", "archive_reason: expired").replace(
            "'2026-01-01'", "'2026-03-01'"
        ),
        ("last_used: 2026-01-06T10:00:00", "last_used: 2026-01-08T10:00:00"),
    )
    merged = merge_entry(archived, ours, theirs)
    assert not merged.theirs_kept_aside
    meta = meta_of(merged.text)
    assert meta["archive_reason"] == "expired"  # the side used last
    assert meta["restored_at"] == "2026-03-01"  # the later


def test_odd_hand_values_merge_as_what_they_stand_for() -> None:
    """A tag written alone is a list of one; a number beats a value that is none (NaN, a
    word), on whichever side, so decay and recall can still read the entry."""
    ours = edit(BASE, ("tags: [wind, paper]", "tags: wind"), ("stability: 1", "stability: .nan"))
    ours = edit(ours, ("score: 0.5", "score: high"))
    theirs = edit(BASE, ("tags: [wind, paper]", "tags: [wind, paper, sky]"))
    theirs = edit(theirs, ("stability: 1", "stability: 5"), ("score: 0.5", "score: 0.7"))
    meta = meta_of(merge_entry(BASE, ours, theirs).text)
    assert meta["tags"] == ["wind", "sky"]  # paper removed by ours, sky added by theirs
    assert (meta["stability"], meta["score"]) == (5, 0.7)
    big = edit(BASE, ("score: 0.5", "score: " + "9" * 401))  # an int no float holds
    assert meta_of(merge_entry(BASE, big, theirs).text)["stability"] == 5
    # The other way round: the same.
    meta = meta_of(merge_entry(BASE, theirs, ours).text)
    tags = meta["tags"]
    assert isinstance(tags, list) and sorted(tags) == ["sky", "wind"]
    assert (meta["stability"], meta["score"]) == (5, 0.7)


def test_a_key_removed_on_one_side_and_kept_on_the_other_goes() -> None:
    ours = edit(BASE, ("project: garden\n", ""))
    theirs = edit(BASE, ("line one", "line 1"))
    merged = merge_entry(BASE, ours, theirs)
    assert "project" not in meta_of(merged.text)
    assert frontmatter.parse(merged.text).body.startswith("line 1\n")


def test_the_same_body_line_is_a_conflict_ours_kept() -> None:
    ours = edit(BASE, ("line two", "line two, ours"), ("score: 0.5", "score: 0.6"))
    theirs = edit(BASE, ("line two", "line two, theirs"), ("project: garden", "project: park"))
    merged = merge_entry(BASE, ours, theirs)
    assert merged.theirs_kept_aside
    assert "line two, ours" in merged.text and "theirs" not in merged.text
    assert "<<<<<<<" not in merged.text and ">>>>>>>" not in merged.text
    assert meta_of(merged.text)["project"] == "park"  # the keys still merge


def test_one_name_new_on_both_sides() -> None:
    ours = "---\ntags: [a]\ncreated: 2026-01-02T00:00:00\n---\n\nsame\n"
    theirs = "---\ntags: [b]\ncreated: 2026-01-01T00:00:00\nverified: false\n---\n\nsame\n"
    merged = merge_entry("", ours, theirs)
    meta = meta_of(merged.text)
    assert meta["tags"] == ["a", "b"] and meta["verified"] is False
    assert str(meta["created"]).startswith("2026-01-01")
    assert not merged.theirs_kept_aside


def test_two_memories_new_under_one_name_are_not_blended() -> None:
    # Two intentions given one id the same day on two machines (ids carry no machine part
    # before sync is on): the one text of each is its description, the bodies are empty.
    ours = "---\ndescription: renew passport\ndue: 2026-12-20\npriority: mid\n---\n"
    theirs = "---\ndescription: pay rent\ndue: 2026-12-09\npriority: high\n---\n"
    merged = merge_entry("", ours, theirs)
    assert merged.theirs_kept_aside and merged.text == ours
    # Edited on both sides from a common ancestor: one entry, the keys merge as before.
    edited = merge_entry(ours, ours.replace("mid", "low"), ours.replace("passport", "visa"))
    assert not edited.theirs_kept_aside
    assert meta_of(edited.text)["description"] == "renew visa"


def _files(tmp_path: Path, base: str, ours: str, theirs: str) -> list[str]:
    paths = []
    for name, text in (("base", base), ("ours", ours), ("theirs", theirs)):
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    return paths


def test_the_command_git_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    monkeypatch.setenv(NOTES_ENV, str(notes))
    ours = edit(BASE, ("line two", "line two, ours"))
    theirs = edit(BASE, ("line two", "line two, theirs"))
    paths = _files(tmp_path, BASE, ours, theirs)
    assert main(["merge-driver", *paths, "memory/knowledge/kites/SKILL.md"]) == 0
    assert Path(paths[1]).read_text() == ours
    [note] = notes.glob("*.json")
    assert "line two, theirs" in note.read_text()
    monkeypatch.delenv(NOTES_ENV)  # a person's own git merge: git keeps it unmerged
    paths = _files(tmp_path, BASE, ours, theirs)
    assert main(["merge-driver", *paths]) == 1
    assert "<<<<<<<" not in Path(paths[1]).read_text()
    broken = _files(tmp_path, BASE, ours, "---\nkey: [unclosed\n---\nbody\n")
    assert main(["merge-driver", *broken]) == 1  # git marks it: the sync keeps ours
    assert main(["merge-driver", "only-one"]) == 2


def test_a_real_merge_with_the_driver(tmp_path: Path) -> None:
    """git merge itself, with the driver registered as somnid registers it."""
    repo = tmp_path / "repo"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
    git("config", "user.name", "tests")
    git("config", "user.email", "tests@localhost")
    driver = f"{shlex.quote(sys.executable)} -m somnid.sync.merge %O %A %B %P"
    git("config", "merge.somnid.driver", driver)
    (repo / ".git/info/attributes").write_text("SKILL.md merge=somnid\n")
    entry = repo / "SKILL.md"
    entry.write_text(BASE)
    git("add", ".")
    git("commit", "-qm", "base")
    git("checkout", "-qb", "other")
    entry.write_text(edit(BASE, ("score: 0.5", "score: 0.9"), ("line three", "line 3")))
    git("commit", "-qam", "theirs")
    git("checkout", "-q", "main")
    entry.write_text(edit(BASE, ("stability: 1", "stability: 4"), ("line one", "line 1")))
    git("commit", "-qam", "ours")
    git("merge", "-q", "--no-edit", "other")  # adjacent YAML lines: no conflict
    meta = meta_of(entry.read_text())
    assert (meta["score"], meta["stability"]) == (0.9, 4)
    assert frontmatter.parse(entry.read_text()).body == "line 1\nline two\nline 3\n"


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        ("https://me:pw@host/x.git", "https://me:***@host/x.git"),
        ("fatal: ssh://git:tok3n@h:22/r failed", "fatal: ssh://git:***@h:22/r failed"),
        ("https://ghp_t0ken@github.com/me/m.git", "https://***@github.com/me/m.git"),
        ("ssh://git@host/m.git", "ssh://git@host/m.git"),
        ("https://host/x.git", "https://host/x.git"),
        ("/home/me/memory.git", "/home/me/memory.git"),
    ],
)
def test_a_urls_secret_is_masked(said: str, shown: str) -> None:
    assert redact(said) == shown
