"""The store: atomic writes, archive without loss, stale writes refused, broken files left alone."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from somnid.errors import BrokenFile, Conflict, InvalidName, NotFound, PreconditionFailed
from somnid.memory.clock import ManualClock
from somnid.memory.kinds import Kind
from somnid.store.atomic import TEMP_PREFIX, sweep_temp_files, write_atomic
from somnid.store.memories import MemoryStore
from tests.stores import open_store

START = dt.datetime(2026, 10, 3, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def store(tmp_path: Path) -> MemoryStore:
    return open_store(tmp_path, ManualClock(START))


def make(store: MemoryStore, name: str, kind: Kind = Kind.KNOWLEDGE, body: str = "b") -> str:
    return store.create(kind, name, meta={"description": f"about {name}"}, body=body).name


def test_create_writes_a_readable_markdown_file(store: MemoryStore, tmp_path: Path) -> None:
    entry = store.create(Kind.KNOWLEDGE, "Deploy window", meta={"description": "d"}, body="text\n")
    path = tmp_path / "memory/knowledge/Deploy-window/SKILL.md"
    assert entry.name == "Deploy-window"
    assert path.read_text() == "---\nname: Deploy-window\ndescription: d\n---\n\ntext\n"
    assert store.read(Kind.KNOWLEDGE, "Deploy-window").body == "text\n"


def test_create_refuses_an_existing_name(store: MemoryStore) -> None:
    make(store, "x")
    with pytest.raises(Conflict):
        make(store, "x")


def test_paths_per_kind(store: MemoryStore) -> None:
    assert str(store.create(Kind.SKILL, "s", meta={}, body="").path) == (
        "skills/agent_learned_skills/s/SKILL.md"
    )
    assert str(store.create(Kind.INTENTION, "pi-1", meta={}, body="").path) == (
        "memory/intentions/pi-1/INTENT.md"
    )
    assert str(store.create(Kind.EPISODE, "e", meta={}, body="").path) == (
        "memory/episodes/e/SKILL.md"
    )
    assert str(store.create(Kind.PROFILE, "about_me", meta={}, body="").path) == (
        "memory/about_me.md"
    )
    assert str(store.create(Kind.PROFILE, "ou_1", meta={}, body="").path) == (
        "memory/users/ou_1/about_user.md"
    )


@pytest.mark.parametrize("name", ["../../etc", "/abs", "a/b", "..", "nul\x00", "archived"])
def test_hostile_names_never_touch_the_disk(store: MemoryStore, tmp_path: Path, name: str) -> None:
    with pytest.raises(InvalidName):
        make(store, name)
    with pytest.raises(InvalidName):
        store.read(Kind.KNOWLEDGE, name)
    assert not (tmp_path.parent / "etc").exists()
    assert list(tmp_path.rglob("*.md")) == []


def test_update_keeps_what_it_was_not_told_to_change(store: MemoryStore, tmp_path: Path) -> None:
    path = tmp_path / "memory/knowledge/k/SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: k  # mine\nowner: me\nticket: 12-34\n---\n\nold\n")
    store.update(Kind.KNOWLEDGE, "k", body="new\n", fields={"tags": ["a"], "owner": None})
    assert path.read_text() == "---\nname: k  # mine\nticket: 12-34\ntags:\n- a\n---\n\nnew\n"


def test_stale_write_is_refused(store: MemoryStore) -> None:
    make(store, "k")
    first = store.read(Kind.KNOWLEDGE, "k")
    store.update(Kind.KNOWLEDGE, "k", body="one", if_match=first.etag)
    with pytest.raises(PreconditionFailed):
        store.update(Kind.KNOWLEDGE, "k", body="two", if_match=first.etag)
    assert store.read(Kind.KNOWLEDGE, "k").body == "one\n"


def test_archive_never_overwrites_an_archived_copy(store: MemoryStore, tmp_path: Path) -> None:
    make(store, "fact", body="first")
    store.archive(Kind.KNOWLEDGE, "fact", reason="retired")
    make(store, "fact", body="second")
    second = store.archive(Kind.KNOWLEDGE, "fact", reason="archived")
    assert second.name == "fact--2"
    archive = tmp_path / "memory/archived"
    assert sorted(p.name for p in archive.iterdir()) == ["fact", "fact--2"]
    assert (archive / "fact/SKILL.md").read_text().endswith("first\n")
    assert (archive / "fact--2/SKILL.md").read_text().endswith("second\n")
    assert not store.exists(Kind.KNOWLEDGE, "fact")
    assert store.read(Kind.KNOWLEDGE, "fact", archived=True).meta["archive_reason"] == "retired"


def test_restore_brings_it_back_and_refuses_to_clobber(store: MemoryStore) -> None:
    make(store, "fact")
    store.archive(Kind.KNOWLEDGE, "fact", reason="retired")
    make(store, "fact")
    with pytest.raises(Conflict):
        store.restore(Kind.KNOWLEDGE, "fact")
    store.archive(Kind.KNOWLEDGE, "fact", reason="again")
    restored = store.restore(Kind.KNOWLEDGE, "fact--2")
    assert restored.name == "fact" and not restored.archived
    assert "archived_at" not in restored.meta
    assert store.exists(Kind.KNOWLEDGE, "fact", archived=True)


def test_a_name_with_a_double_dash_comes_back_as_it_was(store: MemoryStore, tmp_path: Path) -> None:
    """Only the ``--<n>`` an archive adds is taken off: an entry a person named
    "release--v2" comes back as itself, and one archived beside an older copy (stored as
    "release--v2--2") comes back as "release--v2" too."""
    folder = tmp_path / "memory/knowledge/release--v2"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: by hand\n---\nv2 notes\n")
    store.archive(Kind.KNOWLEDGE, "release--v2", reason="done")
    assert store.restore(Kind.KNOWLEDGE, "release--v2").name == "release--v2"
    store.archive(Kind.KNOWLEDGE, "release--v2", reason="again")
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\ndescription: by hand\n---\nv3 notes\n")
    store.archive(Kind.KNOWLEDGE, "release--v2", reason="third")
    archive = tmp_path / "memory/archived"
    assert sorted(p.name for p in archive.iterdir()) == ["release--v2", "release--v2--2"]
    restored = store.restore(Kind.KNOWLEDGE, "release--v2--2")
    assert restored.name == "release--v2" and restored.body == "v3 notes\n"
    assert "archived_from" not in restored.meta


def test_missing_entries(store: MemoryStore) -> None:
    with pytest.raises(NotFound):
        store.read(Kind.KNOWLEDGE, "nope")
    with pytest.raises(NotFound):
        store.update(Kind.KNOWLEDGE, "nope", body="x")
    with pytest.raises(NotFound):
        store.archive(Kind.KNOWLEDGE, "nope", reason="x")
    with pytest.raises(NotFound):
        store.restore(Kind.KNOWLEDGE, "nope")


def test_broken_file_is_reported_and_left_alone(store: MemoryStore, tmp_path: Path) -> None:
    make(store, "good")
    broken = tmp_path / "memory/knowledge/bad/SKILL.md"
    broken.parent.mkdir(parents=True)
    original = b"---\nname: bad\nname: twice\n---\n\nhand edit gone wrong\n"
    broken.write_bytes(original)
    invalid_utf8 = tmp_path / "memory/knowledge/binary/SKILL.md"
    invalid_utf8.parent.mkdir(parents=True)
    invalid_utf8.write_bytes(b"---\nname: \xff\xfe\n---\n")
    names = [entry.name for entry in store.scan((Kind.KNOWLEDGE,))]
    assert names == ["good"]
    reports = {report.path: report.reason for report in store.broken()}
    assert set(reports) == {"memory/knowledge/bad/SKILL.md", "memory/knowledge/binary/SKILL.md"}
    assert "UTF-8" in reports["memory/knowledge/binary/SKILL.md"]
    with pytest.raises(BrokenFile):
        store.update(Kind.KNOWLEDGE, "bad", body="fixed?")
    with pytest.raises(BrokenFile):
        store.archive(Kind.KNOWLEDGE, "bad", reason="x")
    with pytest.raises(BrokenFile):
        store.read(Kind.KNOWLEDGE, "bad")
    assert broken.read_bytes() == original
    broken.write_text("---\nname: bad\n---\n\nfixed by hand\n")
    assert store.read(Kind.KNOWLEDGE, "bad").body == "fixed by hand\n"
    assert [r.path for r in store.broken()] == ["memory/knowledge/binary/SKILL.md"]


def test_a_folder_name_no_request_can_give_stays_reported_whoever_reads_it(
    store: MemoryStore, tmp_path: Path
) -> None:
    # History and sync read such a file by its path, whole: that cleared the report, and
    # status stopped naming the folder a few seconds after it was made.
    path = tmp_path / "memory/knowledge/my notes/SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\ndescription: x\n---\n\nx\n")
    assert store.scan((Kind.KNOWLEDGE,)) == []
    rel = "memory/knowledge/my notes/SKILL.md"
    assert [r.path for r in store.broken()] == [rel]
    for _ in range(2):  # parsed, then from the cache
        entry = store.read_path(path)
        assert entry is not None and entry.body == "x\n"
        assert [r.path for r in store.broken()] == [rel]


def test_hand_edit_shows_in_the_next_read(store: MemoryStore, tmp_path: Path) -> None:
    make(store, "k", body="before")
    assert store.read(Kind.KNOWLEDGE, "k").body == "before\n"
    path = tmp_path / "memory/knowledge/k/SKILL.md"
    text = path.read_text().replace("before", "after, edited in vim")
    path.write_text(text)
    os.utime(path, ns=(1, 1))  # even with an mtime that went backwards
    assert store.read(Kind.KNOWLEDGE, "k").body == "after, edited in vim\n"


def test_a_same_size_hand_edit_that_puts_the_mtime_back_shows(
    store: MemoryStore, tmp_path: Path
) -> None:
    # touch -r, rsync -t and cp -p keep the mtime: a probe saw the old text and an ETag no
    # write could match, for good.
    make(store, "k", body="aaaa")
    before = store.read(Kind.KNOWLEDGE, "k")
    path = tmp_path / "memory/knowledge/k/SKILL.md"
    info = path.stat()
    edited = path.read_text().replace("aaaa", "bbbb")
    path.write_text(edited)
    while path.stat().st_ctime_ns == info.st_ctime_ns:  # a kernel's coarse clock: a tick on
        path.write_text(edited)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert path.stat().st_size == info.st_size and path.stat().st_ino == info.st_ino
    after = store.read(Kind.KNOWLEDGE, "k")
    assert after.body == "bbbb\n" and after.etag != before.etag


def test_sequence_names_skip_archived_ids(store: MemoryStore) -> None:
    day = dt.date(2026, 10, 3)
    first = store.next_sequence_name(Kind.INTENTION, "pi", day)
    assert first == "pi-20261003-001"
    make(store, first, Kind.INTENTION)
    store.archive(Kind.INTENTION, first, reason="completed")
    assert store.next_sequence_name(Kind.INTENTION, "pi", day) == "pi-20261003-002"


def test_atomic_write_leaves_nothing_behind_on_failure(tmp_path: Path) -> None:
    target = tmp_path / "f.md"
    target.write_text("old")
    with pytest.raises(FileExistsError):
        write_atomic(target, b"new", exclusive=True)
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]
    write_atomic(target, b"new")
    assert target.read_text() == "new"
    (tmp_path / f"{TEMP_PREFIX}deadbeef").write_text("crash leftover")
    assert [p.name for p in sweep_temp_files(tmp_path)] == [f"{TEMP_PREFIX}deadbeef"]
    assert [p.name for p in tmp_path.iterdir()] == ["f.md"]


def test_scan_ignores_odd_things_in_kind_folders(store: MemoryStore, tmp_path: Path) -> None:
    make(store, "real")
    folder = tmp_path / "memory/knowledge"
    (folder / "stray.md").write_text("not an entry")
    (folder / "empty-folder").mkdir()
    (folder / ".git").mkdir()
    (folder / "link").symlink_to(tmp_path / "memory/knowledge/real")
    assert [entry.name for entry in store.scan((Kind.KNOWLEDGE,))] == ["real"]


def test_count_agrees_with_files_on_odd_folders(store: MemoryStore) -> None:
    for name in ("a", "b", "c"):
        make(store, name)
    make(store, "s", Kind.SKILL)
    store.archive(Kind.KNOWLEDGE, "c", reason="test")
    folder = store.layout.kind_dir(Kind.KNOWLEDGE)
    (folder / "empty-folder").mkdir()  # no SKILL.md: not an entry
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "SKILL.md").write_text("---\nname: h\n---\n")
    (folder / "stray.md").write_text("a file, not a folder")
    (folder / "linked").symlink_to(folder / "a")  # a link is not followed
    for kind in Kind:
        assert store.count(kind) == sum(1 for _ in store.files(kind)), kind
    assert store.count(Kind.KNOWLEDGE) == 2
    assert store.count(Kind.SKILL) == 1


def test_put_raw_is_the_door_for_history_s_file_writes(store: MemoryStore, tmp_path: Path) -> None:
    """A revert puts files back through the store: atomically, its folder pruned once empty
    when asked, and never through a symbolic link."""
    made = store.create(Kind.KNOWLEDGE, "vpn", meta={}, body="port 443\n")
    path = store.layout.entry_file(Kind.KNOWLEDGE, "vpn")
    before = path.read_bytes()
    store.update(Kind.KNOWLEDGE, "vpn", body="port 8443\n")
    store.put_raw(path, before)
    assert store.read(Kind.KNOWLEDGE, "vpn").etag == made.etag
    assert list(path.parent.glob(f"{TEMP_PREFIX}*")) == []

    store.put_raw(path, None, prune_folder=True)
    assert not path.parent.exists()
    assert store.layout.kind_dir(Kind.KNOWLEDGE).is_dir()  # a kind's folder stays

    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, store.layout.kind_dir(Kind.KNOWLEDGE) / "linked")
    with pytest.raises(BrokenFile, match="symbolic link"):
        store.put_raw(store.layout.entry_file(Kind.KNOWLEDGE, "linked"), b"x")
    assert list(outside.iterdir()) == []


def test_parsed_entries_kept_are_bounded_and_the_least_recent_go(store: MemoryStore) -> None:
    """A large store's first sync reads every file: all of them were kept parsed (250 MB at
    100k entries). The most recently read are kept; one read again after it left is parsed
    fresh, and one kept is the same object."""
    store.entries_kept = 3
    for number in range(5):
        make(store, f"fact-{number}", body=f"fact {number}")
    read = {n: store.read(Kind.KNOWLEDGE, f"fact-{n}") for n in range(5)}
    assert store.read(Kind.KNOWLEDGE, "fact-4") is read[4]
    again = store.read(Kind.KNOWLEDGE, "fact-0")
    assert again is not read[0] and again.body == read[0].body
    # fact-0 came back, fact-2 left: 3, 4 and 0 are the most recent.
    assert store.read(Kind.KNOWLEDGE, "fact-3") is read[3]
    assert store.read(Kind.KNOWLEDGE, "fact-2") is not read[2]
    assert len(store._cache) == 3
