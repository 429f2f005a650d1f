"""A purge travels: purged on one machine, the entry goes on every machine that syncs, an
edit made meanwhile elsewhere does not bring it back, and with ``history`` no commit
reachable on either machine or on the remote holds it any more."""

from __future__ import annotations

from pathlib import Path

from somnid.history.purge import OWN_REFS
from somnid.sync.remote import TRACKING
from tests.sync.helpers import (
    bare_remote,
    fsck,
    git,
    machine,
    memory_files,
    patch,
    read,
    sync,
    write,
)

SECRET = "the door code is 4417"


def _everywhere(repo: Path) -> str:
    """Every reachable version of every file (all refs), as git log -p shows them."""
    return git(repo, "log", "--all", "-p", "--format=%H")


def test_a_purge_with_history_travels(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "door", f"{SECRET}\n")
        write(a, "garden", "roses\n")
        sync(a)
        sync(b)
        assert read(b, "door") is not None
        # Meanwhile on b: an edit of the entry a purges, and of another one.
        patch(b, "door", body=f"{SECRET}, or 4418\n")
        patch(b, "garden", body="roses and tulips\n")
        with a.client() as client:
            done = client.post(
                "/v1/memories/knowledge/door/purge", params={"confirm": "door", "history": "true"}
            )
            assert done.status_code == 200, done.text
        # When the purge answers, no ref keeps it (the last fetch's ref did, until the next
        # round: a probe read the secret there; with the remote down, for good).
        assert SECRET not in _everywhere(a.data_dir)
        fsck(a.data_dir)
        sync(a)  # replaces the remote's branch: the only forced push
        assert SECRET not in _everywhere(remote)
        sync(b)  # receives the purge: forgets the entry and its history, then merges
        sync(a)
        for daemon in (a, b):
            assert read(daemon, "door") is None
            garden = read(daemon, "garden")
            assert garden is not None and garden["body"] == "roses and tulips\n"
            assert SECRET not in _everywhere(daemon.data_dir)
            fsck(daemon.data_dir)
        assert SECRET not in _everywhere(remote)
        assert memory_files(a.data_dir) == memory_files(b.data_dir)

        # Without history too: the purge beats the edit b made meanwhile.
        patch(b, "garden", body="roses, tulips and weeds\n")
        with a.client() as client:
            done = client.post("/v1/memories/knowledge/garden/purge", params={"confirm": "garden"})
            assert done.status_code == 200, done.text
        sync(a)
        sync(b)
        assert read(a, "garden") is None and read(b, "garden") is None

        # A new entry of the purged name, made later, is an entry like any other.
        write(b, "door", "painted blue\n")
        sync(b)
        sync(a)
        door = read(a, "door")
        assert door is not None and door["body"] == "painted blue\n"
        # Its history is not purged again: a rewrote history once, after the purge.
        assert a.log().count("a purge rewrote history") == 1
        assert b.log().count("a purge rewrote history") == 0


def test_a_purge_with_history_takes_the_copy_the_other_machine_archived_meanwhile(
    tmp_path: Path,
) -> None:
    """A probe: b archived the entry (as x--2: an older copy held x) while a's purge was on
    its way; b rewrote its history before the merge, which then saw no move from x to x--2,
    and x--2 with the secret stayed on both machines and the remote."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "pp", f"{SECRET} one\n")
        with a.client() as client:
            assert client.post("/v1/memories/knowledge/pp/archive").status_code == 200
        write(a, "pp", f"{SECRET} two\n")
        sync(a)
        sync(b)
        with a.client() as client:
            done = client.post(
                "/v1/memories/knowledge/pp/purge", params={"confirm": "pp", "history": "true"}
            )
            assert done.status_code == 200, done.text
        with b.client() as client:
            archived = client.post("/v1/memories/knowledge/pp/archive")
            assert archived.status_code == 200 and archived.json()["name"] == "pp--2"
        for daemon in (b, a, b, a):
            sync(daemon)
        for daemon in (a, b):
            assert not list((daemon.data_dir / "memory/archived").glob("pp*"))
            assert SECRET not in _everywhere(daemon.data_dir)
        assert SECRET not in _everywhere(remote)


def test_an_edit_of_a_purged_entry_lands_in_no_other_entry(tmp_path: Path) -> None:
    """A purges one entry and archives another; B edited the purged one meanwhile. git's
    rename detection alone put B's edit into the other entry's archived copy."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "yy", "my bank pin is 4321\n", description="secret")
        write(a, "xx", "the kettle is blue\n", description="ordinary")
        sync(a)
        sync(b)
        patch(b, "yy", body="my bank pin is 9999 now\n")
        with a.client() as client:
            done = client.post("/v1/memories/knowledge/yy/purge", params={"confirm": "yy"})
            assert done.status_code == 200, done.text
            done = client.post("/v1/memories/knowledge/xx/archive")
            assert done.status_code == 200, done.text
        sync(a)
        sync(b)
        sync(a)
        for daemon in (a, b):
            assert read(daemon, "yy") is None
            files = memory_files(daemon.data_dir)
            assert not [rel for rel, text in files.items() if "bank pin" in text], daemon
            kettle = files["memory/archived/xx/SKILL.md"]
            assert "the kettle is blue" in kettle and "archived_at" in kettle
            assert not [rel for rel in files if ".conflict-" in rel]
            fsck(daemon.data_dir)
        assert memory_files(a.data_dir) == memory_files(b.data_dir)


def test_a_file_a_person_is_typing_in_outlives_a_purge_with_history(tmp_path: Path) -> None:
    """A probe: b's file, broken mid-edit (so never committed), was deleted when a's purge
    with history arrived; with no copy anywhere, the person's words were gone for good.
    It is moved out of memory now, where neither history nor sync reads, and the purge
    still takes the entry (a review: left in place, once mended it brought the purged
    entry back everywhere; and an entry of two versions stopped b's syncs for good)."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "door", f"{SECRET}\n")
        patch(a, "door", body=f"{SECRET}, still\n")  # two versions in history
        (a.data_dir / "memory/knowledge/door/notes.txt").write_text("the code changes in May\n")
        sync(a)
        sync(b)
        door = b.data_dir / "memory/knowledge/door"
        assert (door / "notes.txt").exists()
        typing = b"---\nname: door\ndescription: [typing\n---\nmy words, not saved anywhere\n"
        (door / "SKILL.md").write_bytes(typing)
        (door / "draft.txt").write_text("to say at the door\n")  # the history may not have it yet
        with a.client() as client:
            done = client.post(
                "/v1/memories/knowledge/door/purge", params={"confirm": "door", "history": "true"}
            )
            assert done.status_code == 200, done.text
        sync(a)
        sync(b)
        sync(a)
        assert not door.exists() and read(b, "door") is None and read(a, "door") is None
        [kept] = (b.data_dir / "purged-kept").iterdir()
        assert (kept / "memory/knowledge/door/SKILL.md").read_bytes() == typing
        for daemon in (a, b):
            for gone in (SECRET, "the code changes"):
                assert gone not in _everywhere(daemon.data_dir)
            fsck(daemon.data_dir)
        assert SECRET not in _everywhere(remote)
        assert "purged on another machine: memory/knowledge/door/SKILL.md held text" in b.log()
        assert git(b.data_dir, "status", "--porcelain") == ""  # never history's


def test_the_only_ref_a_purge_takes_for_somnid_s_is_sync_s_own() -> None:
    # A re-probe: every ref under refs/somnid-sync/ was taken for somnid's and deleted.
    assert OWN_REFS == (TRACKING,)
