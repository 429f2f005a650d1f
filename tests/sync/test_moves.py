"""A sync's merge on a plain repository (sync/merging.py with sync/moves.py): git's rename
detection never pairs two entries, and somnid's own moves still carry an edit."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from somnid.history.git import Git
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.store.layout import Layout
from somnid.sync import purges
from somnid.sync.merging import _merge_commit
from tests.stores import open_store
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
    # As a data dir has them: entry files merge by somnid's rules, never with git's markers.
    (root / ".git/info/attributes").write_text(
        "SKILL.md merge=somnid\nINTENT.md merge=somnid\npurged.jsonl merge=union\n"
    )
    return root, _commit(root, files, "base")


def _sides(
    root: Path, base: str, ours: dict[str, str | None], theirs: dict[str, str | None]
) -> tuple[str, str]:
    mine = _commit(root, ours, "ours")
    git(root, "checkout", "-q", "-f", base)
    return mine, _commit(root, theirs, "theirs")


def _purged(name: str) -> str:
    specs = [f"memory/knowledge/{name}", f"memory/archived/{name}"]
    record = {"kind": "knowledge", "name": name, "specs": specs, "history": False}
    return json.dumps({**record, "at": "2026-12-06T08:00:00+00:00", "machine": "aaaaaa"}) + "\n"


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


def test_a_name_ending_in_a_number_is_archived_under_itself(tmp_path: Path) -> None:
    """ "release--2" archived as itself (no archived_from): its live name is its own, not
    "release"; the other side's decay follows it into the archive."""
    live = entry("release--2", "ship on friday")
    root, base = _repo(tmp_path, {knowledge("release--2"): live, knowledge("o"): entry("o", "o")})
    ours, theirs = _sides(
        root,
        base,
        {
            knowledge("release--2"): None,
            archived("release--2"): entry("release--2", "ship on friday", ARCHIVED),
        },
        {knowledge("release--2"): live.replace("score: 0.5", "score: 0.4")},
    )
    merged, _ = _merge(root, ours, theirs)
    assert _at(root, merged, knowledge("release--2")) is None
    assert "score: 0.4" in (_at(root, merged, archived("release--2")) or "")


def test_an_entry_archived_while_a_new_one_takes_its_name(tmp_path: Path) -> None:
    """The other side's decay of the old entry goes into its archived copy, never into the
    new entry of the same name (known by ``created``)."""
    old = entry("x", "the kettle is blue")
    new = entry("x", "the car is red").replace("created: 2026-12-06", "created: 2026-12-07")
    root, base = _repo(tmp_path, {knowledge("x"): old})
    ours, theirs = _sides(
        root,
        base,
        {archived("x"): entry("x", "the kettle is blue", ARCHIVED), knowledge("x"): new},
        {knowledge("x"): old.replace("score: 0.5", "score: 0.31")},
    )
    merged, _ = _merge(root, ours, theirs)
    live, kept = _at(root, merged, knowledge("x")) or "", _at(root, merged, archived("x")) or ""
    assert "the car is red" in live and "score: 0.5" in live
    assert "the kettle is blue" in kept and "score: 0.31" in kept


def test_an_entry_written_by_hand_archived_while_a_new_one_takes_its_name(
    tmp_path: Path,
) -> None:
    """A probe: an entry written by hand has no ``created``; the other side's edit of it
    went into the new entry of its name (the new entry's text set aside as a conflict)."""
    old = "---\nname: x\ndescription: the kettle\n---\n\n\nthe kettle is blue"  # as typed
    copy = old.replace("---\n\n\n", ARCHIVED + "---\n\n", 1) + "\n"  # as archived
    root, base = _repo(tmp_path, {knowledge("x"): old})
    ours, theirs = _sides(
        root,
        base,
        {archived("x"): copy, knowledge("x"): entry("x", "the car is red")},
        {knowledge("x"): old.replace("is blue", "is blue, and old")},
    )
    merged, conflicts = _merge(root, ours, theirs)
    live, kept = _at(root, merged, knowledge("x")) or "", _at(root, merged, archived("x")) or ""
    assert "the car is red" in live and "kettle" not in live
    # The edit goes with the archived copy: a whitespace change the archive made to the
    # same line keeps it beside the copy, as a conflict of the copy, never of the new entry.
    assert "archived_at" in kept
    assert [c.rsplit("/", 1)[0] for c in conflicts] == ["memory/archived/x"]
    assert "is blue, and old" in (_at(root, merged, conflicts[0]) or "")


def test_names_in_another_case_merge_as_one_but_twins_of_one_side_stay(tmp_path: Path) -> None:
    root, base = _repo(tmp_path, {knowledge("o"): entry("o", "o")})
    ours, theirs = _sides(
        root,
        base,
        {knowledge("casey"): entry("casey", "tea"), knowledge("dana"): entry("dana", "one")},
        {
            knowledge("Casey"): entry("Casey", "coffee"),
            knowledge("Dana"): entry("Dana", "two"),  # two twins of dana on that side:
            knowledge("DANA"): entry("DANA", "three"),  # moved, one would drop the other
        },
    )
    merged, conflicts = _merge(root, ours, theirs)
    folders = git(root, "ls-tree", "--name-only", f"{merged}:memory/knowledge").split()
    assert folders == ["DANA", "Dana", "casey", "dana", "o"]
    assert conflicts == ["memory/knowledge/casey/SKILL.conflict-" + theirs[:12] + ".md"]
    assert "coffee" in (_at(root, merged, conflicts[0]) or "")


def test_a_purge_follows_the_entry_the_other_side_moved(tmp_path: Path) -> None:
    """Ours purges x; theirs archived it as x--2 (an older x was archived already): the
    purged text goes there too. Either side merging; and theirs' syncs never fail."""
    root, base = _repo(
        tmp_path,
        {
            knowledge("x"): entry("x", "my bank pin is 4321"),
            archived("x"): entry("x", "an older x", ARCHIVED),
            knowledge("o"): entry("o", "o"),
        },
    )
    purger, mover = _sides(
        root,
        base,
        {knowledge("x"): None, archived("x"): None, "memory/purged.jsonl": _purged("x")},
        {
            knowledge("x"): None,
            archived("x--2"): entry("x", "my bank pin is 4321", ARCHIVED + "archived_from: x\n"),
        },
    )
    for ours, theirs in ((purger, mover), (mover, purger)):
        merged, _ = _merge(root, ours, theirs)
        listed = git(root, "ls-tree", "-r", "--name-only", merged).split()
        assert not [rel for rel in listed if "bank pin" in (_at(root, merged, rel) or "")]
        assert _at(root, merged, knowledge("o")) is not None


def test_a_purge_and_a_new_entry_of_that_name_merge_into_a_diverged_machine(
    tmp_path: Path,
) -> None:
    """A purged x and wrote a new x; B has a commit of its own. The purge's paths were taken
    out of the merge's scratch index with a plain ``git rm --cached``, which refuses a file
    that differs from HEAD and the work tree: every sync of B failed."""
    root, base = _repo(
        tmp_path, {knowledge("x"): entry("x", "old x"), knowledge("o"): entry("o", "o")}
    )
    purger, diverged = _sides(
        root,
        base,
        {knowledge("x"): entry("x", "a new x"), "memory/purged.jsonl": _purged("x")},
        {knowledge("o"): entry("o", "o edited on B")},
    )
    git(root, "checkout", "-q", "-f", diverged)  # B's data dir: HEAD and work tree are B's
    merged, _ = _merge(root, diverged, purger)
    assert "a new x" in (_at(root, merged, knowledge("x")) or "")
    assert "o edited on B" in (_at(root, merged, knowledge("o")) or "")


def test_a_purge_line_edited_by_hand_drops_no_other_entry(tmp_path: Path) -> None:
    """A line naming w9 with the whole knowledge folder as its path gave all of
    memory/knowledge to the side that 'purged': an entry made on the other machine was
    deleted there, by a merge that no revert could undo. Only w9's own paths count."""
    root, base = _repo(tmp_path, {knowledge("o"): entry("o", "o")})
    line = {"kind": "knowledge", "name": "w9", "specs": ["memory/knowledge", "memory/../index"]}
    stamp = {"at": "2026-12-06T21:20:00+00:00", "machine": "179d62", "history": True}
    edited, maker = _sides(
        root,
        base,
        {"memory/purged.jsonl": json.dumps({**line, **stamp}) + "\n"},
        {knowledge("onlyona"): entry("onlyona", "precious text from A")},
    )
    for ours, theirs in ((edited, maker), (maker, edited)):
        merged, _ = _merge(root, ours, theirs)
        assert "precious text from A" in (_at(root, merged, knowledge("onlyona")) or "")
        assert _at(root, merged, knowledge("o")) is not None
    (parsed,) = purges._parse(json.dumps({**line, **stamp}))
    assert parsed.name == "w9" and parsed.specs == ()
    own = {**line, "specs": ["memory/knowledge/w9", "memory/archived/w9", "memory/knowledge/o"]}
    (parsed,) = purges._parse(json.dumps({**own, **stamp}))
    assert parsed.specs == ("memory/knowledge/w9", "memory/archived/w9")
    assert purges._parse(json.dumps({**line, "name": "../index", **stamp})) == []


def test_removing_paths_touches_nothing_but_entries(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    store = open_store(layout, ManualClock(dt.datetime(2026, 12, 6, tzinfo=dt.UTC)))
    store.create(Kind.KNOWLEDGE, "w2", meta={"description": "x"}, body="x")
    store.create(Kind.KNOWLEDGE, "keep", meta={"description": "y"}, body="y")
    (tmp_path / "index").mkdir()
    (tmp_path / "index/index.sqlite").write_text("derived")
    removed = store.remove_paths(
        ["memory/../index", "memory/knowledge", "memory", "memory/knowledge/w2"]
    )
    assert removed == ["memory/knowledge/w2"]
    assert (tmp_path / "index/index.sqlite").exists()
    assert (tmp_path / "memory/knowledge/keep/SKILL.md").exists()
