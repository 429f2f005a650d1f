"""The merge of two histories, path by path (sync/merging.py), on a plain repository."""

from __future__ import annotations

from pathlib import Path

from somnid.history.git import Git
from somnid.sync.merging import _merge_commit
from tests.sync.helpers import git

ENTRY = (
    "---\nname: {name}\ndescription: ''\ntype: fact\nstability: 0\nscore: 0.5\n"
    "created: 2026-12-06 06:25:18+00:00\nlast_used: 2026-12-06 06:25:18+00:00\n"
    "last_decay: 2026-12-06 06:25:18+00:00\n{more}---\n\n{body}\n"
)
ARCHIVED = "archived_at: 2026-12-06 06:25:18+00:00\narchive_reason: archived\n"


def entry(name: str, body: str, more: str = "") -> str:
    return ENTRY.format(name=name, body=body, more=more)


def _commit(root: Path, files: dict[str, str | None], message: str) -> str:
    for rel, text in files.items():
        path = root / rel
        if text is None:
            git(root, "rm", "-rq", rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        git(root, "add", rel)
    git(root, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def _at(root: Path, commit: str, rel: str) -> str:
    return git(root, "show", f"{commit}:{rel}")


def test_no_rename_pairs_two_entries_and_unrelated_histories_merge(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    xx, yy, kept = (f"memory/knowledge/{n}/SKILL.md" for n in ("xx", "yy", "kept"))
    base = _commit(
        root,
        {xx: entry("xx", "the kettle is blue"), yy: entry("yy", "my bank pin is 4321"),
         kept: entry("kept", "the shed key is under the mat")},
        "base",
    )  # fmt: skip
    # Ours: yy purged, xx and kept archived (moves with new keys). Theirs: yy and kept
    # edited. Git's rename detection paired yy with xx's archived copy.
    archived, kept_archived = "memory/archived/xx/SKILL.md", "memory/archived/kept/SKILL.md"
    ours = _commit(
        root,
        {yy: None, xx: None, kept: None,
         archived: entry("xx", "the kettle is blue", ARCHIVED),
         kept_archived: entry("kept", "the shed key is under the mat", ARCHIVED)},
        "ours",
    )  # fmt: skip
    git(root, "checkout", "-q", base)
    theirs = _commit(
        root,
        {yy: entry("yy", "my bank pin is 9999"), kept: entry("kept", "under the pot")},
        "theirs",
    )
    merged, aside = _merge_commit(Git(root), ours, theirs, "m")
    assert "the kettle is blue" in _at(root, merged, archived)  # not yy's edit
    assert "9999" in _at(root, merged, yy)  # the edit beats the delete, at its own path
    assert "under the pot" in _at(root, merged, kept)  # live again, with the edit
    assert "under the mat" in _at(root, merged, kept_archived)  # its archived copy kept
    assert aside == []

    # Unrelated histories (a remote replaced by hand): no base, each side's files kept.
    git(root, "checkout", "-q", "--orphan", "other")
    git(root, "rm", "-rqf", ".")
    alone = _commit(root, {"memory/knowledge/zz/SKILL.md": entry("zz", "z")}, "z")
    both, _ = _merge_commit(Git(root), merged, alone, "m")
    assert "z" in _at(root, both, "memory/knowledge/zz/SKILL.md")
    assert "9999" in _at(root, both, yy)
