"""A sync's merge on a plain repository (sync/merging.py with sync/moves.py): git's rename
detection never pairs two entries, and somnid's own moves still carry an edit."""

from __future__ import annotations

from pathlib import Path

from somnid.history.git import Git
from somnid.store.layout import Layout
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


def knowledge(name: str) -> str:
    return f"memory/knowledge/{name}/SKILL.md"


def archived(name: str) -> str:
    return f"memory/archived/{name}/SKILL.md"


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


def _at(root: Path, commit: str, rel: str) -> str | None:
    listed = git(root, "ls-tree", "--name-only", commit, "--", rel).strip()
    return git(root, "show", f"{commit}:{rel}") if listed else None


def _merge(root: Path, ours: str, theirs: str) -> tuple[str, list[str]]:
    return _merge_commit(Git(root), Layout(root), ours, theirs, "m")


def _repo(tmp_path: Path, files: dict[str, str | None]) -> tuple[Path, str]:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    return root, _commit(root, files, "base")


def test_no_rename_pairs_two_entries(tmp_path: Path) -> None:
    root, base = _repo(
        tmp_path,
        {
            knowledge("xx"): entry("xx", "the kettle is blue"),
            knowledge("yy"): entry("yy", "my bank pin is 4321"),
            knowledge("kept"): entry("kept", "the shed key is under the mat"),
        },
    )
    # Ours: yy deleted, xx and kept archived (kept under another name). Theirs: yy and kept
    # edited. git's rename detection alone paired yy with xx's archived copy.
    ours = _commit(
        root,
        {
            knowledge("yy"): None,
            knowledge("xx"): None,
            knowledge("kept"): None,
            archived("xx"): entry("xx", "the kettle is blue", ARCHIVED),
            archived("kept--2"): entry(
                "kept", "the shed key is under the mat", ARCHIVED + "archived_from: kept\n"
            ),
        },
        "ours",
    )
    git(root, "checkout", "-q", base)
    theirs = _commit(
        root,
        {
            knowledge("yy"): entry("yy", "my bank pin is 9999"),
            knowledge("kept"): entry("kept", "under the pot"),
        },
        "theirs",
    )
    merged, aside = _merge(root, ours, theirs)
    xx = _at(root, merged, archived("xx"))
    assert xx is not None and "the kettle is blue" in xx and "9999" not in xx
    assert "9999" in (_at(root, merged, knowledge("yy")) or "")  # the edit beats the delete
    kept = _at(root, merged, archived("kept--2")) or ""
    # git is told the archive (archived_from names it): theirs' edit follows it.
    assert "under the pot" in kept and "archived_at" in kept and "under the mat" not in kept
    assert _at(root, merged, knowledge("kept")) is None  # a day's edit does not bring it back
    assert aside == []
    assert git(root, "rev-list", "--parents", "-1", merged).split()[1:] == [ours, theirs]

    # Unrelated histories (a remote replaced by hand): no base, each side's files kept.
    git(root, "checkout", "-q", "--orphan", "other")
    git(root, "rm", "-rqf", ".")
    alone = _commit(root, {knowledge("zz"): entry("zz", "z")}, "z")
    both, _ = _merge(root, merged, alone)
    assert "z" in (_at(root, both, knowledge("zz")) or "")
    assert "9999" in (_at(root, both, knowledge("yy")) or "")


def test_a_restore_carries_the_other_sides_edit(tmp_path: Path) -> None:
    old = entry("rr", "the boat is green", ARCHIVED)
    root, base = _repo(tmp_path, {archived("rr"): old, knowledge("ss"): entry("ss", "s")})
    ours = _commit(
        root, {archived("rr"): None, knowledge("rr"): entry("rr", "the boat is green")}, "ours"
    )
    git(root, "checkout", "-q", base)
    theirs = _commit(root, {archived("rr"): old.replace("score: 0.5", "score: 0.4")}, "theirs")
    merged, aside = _merge(root, ours, theirs)
    live = _at(root, merged, knowledge("rr")) or ""
    assert "score: 0.4" in live and "archived_at" not in live
    assert _at(root, merged, archived("rr")) is None
    assert aside == []
