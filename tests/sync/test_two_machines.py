"""Two daemons on two data dirs and one bare remote (issue 23's bar): each writes through
the API, both sync, both hold every entry; edits of different keys of one entry merge; the
same body line edited on both sides leaves one entry and one listed conflict."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from somnid.cli import main
from tests.cli.runner import daemon_env
from tests.sync.helpers import (
    bare_remote,
    committed,
    fsck,
    git,
    indexed,
    machine,
    make_skill,
    memory_files,
    no_markers,
    patch,
    read,
    status,
    sync,
    wait_for,
    write,
)

BODY = "line one\nline two\nline three\n"


def test_two_machines_share_one_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        # Each writes its own entries; after a round each way both hold all of them.
        write(a, "kites", BODY, tags=["wind"])
        write(b, "boats", "sails\n")
        write(a, "shared", "one name, two machines\n", tags=["from-a"])
        write(b, "shared", "one name, two machines\n", tags=["from-b"])
        sync(a)
        sync(b)  # two histories that share nothing yet: merged, not refused
        sync(a)
        assert read(a, "boats") is not None and read(b, "kites") is not None
        # The same new name on both: one entry, keys merged, the same on both machines
        # (the order of the tags is the merging machine's: tests/sync/test_merge_driver.py).
        both = [read(daemon, "shared") for daemon in (a, b)]
        assert both[0] is not None and both[1] is not None
        assert sorted(both[0]["meta"]["tags"]) == ["from-a", "from-b"]
        assert both[0]["meta"]["tags"] == both[1]["meta"]["tags"]
        wait_for(lambda: indexed(a) == 3 and indexed(b) == 3, "both indexes follow the merge")

        # Different keys of one entry, changed on each side: merged, no conflict.
        patch(a, "kites", description="kites fly in the wind")
        patch(b, "kites", fields={"tags": ["wind", "sky"], "project": "garden"})
        sync(a)
        sync(b)
        sync(a)
        for daemon in (a, b):
            kites = read(daemon, "kites")
            assert kites is not None
            assert kites["meta"]["description"] == "kites fly in the wind"
            assert kites["meta"]["tags"] == ["wind", "sky"]
            assert kites["meta"]["project"] == "garden"
            assert kites["body"] == BODY
            assert status(daemon)["conflicts"] == []

        # The same body line on both sides: one entry, the other text kept as a conflict.
        patch(a, "kites", body=BODY.replace("line two", "line two, as A says"))
        patch(b, "kites", body=BODY.replace("line two", "line two, as B says"))
        sync(a)
        merged = sync(b)
        assert [c["entry"] for c in merged["conflicts"]] == ["memory/knowledge/kites/SKILL.md"], (
            merged
        )
        conflict = merged["conflicts"][0]
        assert conflict["kind"] == "knowledge" and conflict["name"] == "kites"
        assert "line two, as A says" in conflict["text"]
        kites_b = read(b, "kites")
        assert kites_b is not None and "line two, as B says" in kites_b["body"]
        after = sync(a)
        assert [c["path"] for c in after["conflicts"]] == [conflict["path"]]
        assert (after["ahead"], after["behind"]) == (0, 0)
        assert after["lastPull"] and after["lastPush"]
        assert after["conflicts"][0]["entryText"] == (a.data_dir / conflict["entry"]).read_text()

        # The command line says the same: `somnid status` and `somnid doctor` (in process:
        # a child's start costs more than both commands).
        for key, value in daemon_env(a, SOMNID_SYNC__REMOTE=str(remote)).items():
            monkeypatch.setenv(key, value)
        assert main(["status"]) == 0
        said = capsys.readouterr().out.split("\nsync\n", 1)[1]
        assert re.search(r"ahead/behind +0 / 0", said) and re.search(r"conflicts +1", said)
        assert re.search(r"last pull +\d{4}-", said) and re.search(r"last push +\d{4}-", said)
        assert f"{conflict['path']} (beside {conflict['entry']})" in said, said
        main(["doctor", "--json"])
        findings = json.loads(capsys.readouterr().out)["findings"]
        [finding] = [f for f in findings if f["check"] == "sync"]
        assert finding["level"] == "WARN" and finding["details"] == [conflict["path"]], finding
        how = r"0 ahead, 0 behind, last pull \d{4}-.*, last push \d{4}-"
        assert re.search(how, finding["message"]), finding

        # History reads a synced history: the merges are commits like others.
        with b.client() as client:
            page = client.get("/v1/history", params={"limit": 50})
            assert page.status_code == 200, page.text
            merges = [c for c in page.json()["items"] if c["subject"].startswith("Sync:")]
            assert merges, page.json()
            for commit in merges:
                shown = client.get(f"/v1/history/{commit['id']}")
                assert shown.status_code == 200, shown.text
            entry = client.get("/v1/history/entries/knowledge/kites")
            assert entry.status_code == 200 and entry.json()["total"] >= 4, entry.text

        # Nothing lost, nothing half-merged: both data dirs hold the same memory.
        for daemon in (a, b):
            no_markers(daemon.data_dir)
            fsck(daemon.data_dir)
        assert memory_files(a.data_dir) == memory_files(b.data_dir)

        # Taking the other's version over a file a person is editing (it does not parse, so
        # history does not hold it) would lose their text: refused, both files as they were.
        entry_file = a.data_dir / conflict["entry"]
        mine = entry_file.read_text()
        entry_file.write_text("---\ndescription: [unclosed\n---\n\nhalf typed\n")
        with a.client() as client:
            taking = client.delete(
                "/v1/sync/conflicts", params={"path": conflict["path"], "keep": "other"}
            )
        assert taking.status_code == 409 and taking.json()["code"] == "broken_file", taking.text
        assert entry_file.read_text().endswith("half typed\n")
        assert (a.data_dir / conflict["path"]).is_file()
        entry_file.write_text(mine)
        # The same for an archived entry's file (read_path reads live entries only).
        folder = a.data_dir / "memory/archived/torn"
        folder.mkdir(parents=True)
        torn = "---\ndescription: [unclosed\n---\n\nhalf typed, archived\n"
        (folder / "SKILL.md").write_text(torn)
        (folder / "SKILL.conflict-0123456789ab.md").write_text("---\nname: torn\n---\n\nx\n")
        with a.client() as client:
            taking = client.delete(
                "/v1/sync/conflicts",
                params={
                    "path": "memory/archived/torn/SKILL.conflict-0123456789ab.md",
                    "keep": "other",
                },
            )
        assert taking.status_code == 409 and taking.json()["code"] == "broken_file", taking.text
        assert (folder / "SKILL.md").read_text() == torn
        shutil.rmtree(folder)

        # Settling the conflict removes its file (history keeps it); the other follows.
        with a.client() as client:
            missing = client.delete("/v1/sync/conflicts", params={"path": "memory/nope.md"})
            assert missing.status_code == 404
            assert missing.headers["content-type"].startswith("application/problem+json")
            odd = {"path": conflict["path"], "keep": "both"}
            assert client.delete("/v1/sync/conflicts", params=odd).status_code == 422
            done = client.delete("/v1/sync/conflicts", params={"path": conflict["path"]})
            assert done.status_code == 204, done.text
        sync(a)
        assert sync(b)["conflicts"] == []

        # A person's edit in progress (it does not parse yet) is never overwritten by a
        # merge: the merged version is committed, the file on disk stays theirs.
        half = "---\ndescription: [unclosed\n---\n\nhalf typed\n"
        kites_file = b.data_dir / "memory/knowledge/kites/SKILL.md"
        kites_file.write_text(half)
        patch(a, "kites", description="changed on a meanwhile")
        sync(a)
        sync(b)
        assert kites_file.read_text() == half
        merged_text = git(b.data_dir, "show", "HEAD:memory/knowledge/kites/SKILL.md")
        assert "changed on a meanwhile" in merged_text
        # ... and the merged version is beside it, a conflict: once the person's file, mended,
        # was committed over it, a's change was lost on both machines, silently (a probe).
        [listed] = status(b)["conflicts"]
        assert listed["entry"] == "memory/knowledge/kites/SKILL.md"
        assert "changed on a meanwhile" in (b.data_dir / listed["path"]).read_text()


def test_generated_names_of_two_machines_never_meet(tmp_path: Path) -> None:
    # A probe: an intention made on each machine was named pi-<day>-001 on both, an episode
    # made in the same second ep-<day>-<time> on both, and the sync kept one of each,
    # silently (the other only in git history).
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        names: dict[str, list[str]] = {}
        for daemon, who in ((a, "A"), (b, "B")):
            with daemon.client(timeout=60.0) as client:
                made = [
                    client.post("/v1/memories/intention", json={"description": f"call {who}"}),
                    client.post("/v1/memories/episode", json={"description": f"met {who}"}),
                ]
            assert all(answer.status_code == 201 for answer in made), [m.text for m in made]
            names[who] = [answer.json()["name"] for answer in made]
        assert not set(names["A"]) & set(names["B"])
        sync(a)
        sync(b)
        sync(a)
        for daemon in (a, b):
            with daemon.client(timeout=60.0) as client:
                listed = client.get("/v1/memories", params={"kind": ["intention", "episode"]})
            held = {item["name"] for item in listed.json()["items"]}
            assert held >= {*names["A"], *names["B"]}, held


def test_a_sync_merge_shows_what_it_brought_and_can_be_undone(tmp_path: Path) -> None:
    # A probe: the merge of the other machine's edit listed no change in history, and
    # neither it nor the edit could be reverted on the machine that merged it.
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kites", BODY)
        sync(a)
        sync(b)
        patch(a, "kites", body=BODY.replace("line one", "line one, from a"))
        patch(b, "kites", body=BODY.replace("line three", "line three, from b"))
        sync(a)
        sync(b)  # b merges a's edit beside its own
        with b.client() as client:
            items = client.get("/v1/history", params={"limit": 5}).json()["items"]
            merge = next(item for item in items if item["subject"].startswith("Sync: "))
            assert [change["name"] for change in merge["changes"]] == ["kites"]
            shown = client.get(f"/v1/history/{merge['id']}").json()
            assert "line one, from a" in json.dumps(shown)
            undone = client.post(f"/v1/history/{merge['id']}/revert")
            assert undone.status_code == 200, undone.text
        kites = read(b, "kites")
        assert kites is not None and kites["body"] == BODY.replace(
            "line three", "line three, from b"
        )


def test_a_skill_s_script_stays_executable_on_both_machines(tmp_path: Path) -> None:
    # Sync wrote every file it brought 0600: B's copy of an executable script lost its bit,
    # B committed the change of mode, and the next round took A's bit away as well.
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        folder = make_skill(a, "deploy-helper")
        script = a.data_dir / folder / "run.sh"
        script.write_text("#!/bin/sh\necho deploy\n")
        script.chmod(0o700)
        wait_for(lambda: committed(a), "a's hand edit is committed")
        assert git(a.data_dir, "ls-files", "-s", f"{folder}/run.sh").startswith("100755")
        sync(a)
        sync(b)
        sync(a)
        for daemon in (a, b):
            copy = daemon.data_dir / folder / "run.sh"
            assert copy.read_text() == "#!/bin/sh\necho deploy\n"
            assert copy.stat().st_mode & 0o100, oct(copy.stat().st_mode)
            assert git(daemon.data_dir, "status", "--porcelain") == ""
            assert git(daemon.data_dir, "ls-files", "-s", f"{folder}/run.sh").startswith("100755")


def test_links_and_submodules_a_person_pushed_stay_in_history(tmp_path: Path) -> None:
    """A probe: links and a submodule a person pushed were never put on disk (by design),
    so each machine's sweep took them for deleted by hand, committed their deletion and
    pushed it: gone from the remote and every machine."""
    remote = bare_remote(tmp_path / "remote.git")
    linked = [
        "memory/knowledge/linky/SKILL.md",
        "memory/kn-alias",
        "skills/agent_learned_skills/vendored",
    ]
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kit", "a hammer\n")
        sync(a)
        hand = tmp_path / "hand"
        subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(hand)], check=True)
        (hand / "memory/knowledge/linky").mkdir(parents=True)
        os.symlink("../kit/SKILL.md", hand / "memory/knowledge/linky/SKILL.md")
        os.symlink("knowledge", hand / "memory/kn-alias")
        git(hand, "add", "-A", "memory")
        head = git(hand, "rev-parse", "HEAD").strip()
        git(hand, "update-index", "--add", "--cacheinfo", f"160000,{head},{linked[2]}")
        git(hand, "-c", "user.name=Ann", "-c", "user.email=a@b", "commit", "-qm", "links")
        git(hand, "push", "-q", "origin", "HEAD:main")
        write(a, "saw", "a saw\n")  # a merges, b fast-forwards
        sync(b)
        sync(a)
        for name, daemon in (("a", a), ("b", b)):
            assert not (daemon.data_dir / "memory/kn-alias").exists()  # never on disk
            write(daemon, f"after-{name}", "later\n")
            with daemon.client() as client:  # a history read commits what is pending
                assert client.get("/v1/history").status_code == 200
            sync(daemon)
        for where in (a.data_dir, b.data_dir, remote):
            tree = git(where, "ls-tree", "-r", "--name-only", "main").split("\n")
            assert all(path in tree for path in linked), (where, tree)
        assert "Hand edit" not in git(remote, "log", "--format=%s")


def test_a_link_the_other_side_made_a_file_is_written(tmp_path: Path) -> None:
    """A review: a link git held (never put on disk) that the other side replaced with a
    regular file was kept from the merge as if a person were editing it: set beside itself
    as a conflict, never written, and its deletion committed and pushed."""
    remote = bare_remote(tmp_path / "remote.git")
    with machine(tmp_path / "a" / "data", remote) as a:
        write(a, "kit", "a hammer\n")
        sync(a)
        hand = tmp_path / "hand"
        subprocess.run(["git", "clone", "-q", "-b", "main", str(remote), str(hand)], check=True)
        as_ann = ("-c", "user.name=Ann", "-c", "user.email=a@b")
        ref = "memory/knowledge/kit/ref.md"
        os.symlink("SKILL.md", hand / ref)
        git(hand, "add", ref)
        git(hand, *as_ann, "commit", "-qm", "a link")
        git(hand, "push", "-q", "origin", "HEAD:main")
        sync(a)
        assert not os.path.lexists(a.data_dir / ref)  # a link is never put on disk
        (hand / ref).unlink()
        (hand / ref).write_text("real notes\n")
        git(hand, "add", ref)
        git(hand, *as_ann, "commit", "-qm", "a file now")
        git(hand, "push", "-q", "origin", "HEAD:main")
        assert sync(a)["conflicts"] == []
        assert (a.data_dir / ref).read_text() == "real notes\n"
        write(a, "later", "a saw\n")
        with a.client() as client:
            assert client.get("/v1/history").status_code == 200
        sync(a)
        assert git(remote, "show", f"main:{ref}") == "real notes\n"


def test_two_conflict_files_shown_under_one_name_are_not_settled(tmp_path: Path) -> None:
    """A review: a name with a byte that is no UTF-8 is shown as ``\\xe9``, as is a name
    holding those four characters: settling one by its shown name took the other."""
    remote = bare_remote(tmp_path / "remote.git")
    with machine(tmp_path / "a" / "data", remote) as a:
        write(a, "kit", "a hammer\n")
        folder = os.fsencode(a.data_dir / "memory/knowledge/kit")
        for name in (b"n\xe9.conflict-0123456789ab.txt", b"n\\xe9.conflict-0123456789ab.txt"):
            with open(folder + b"/" + name, "wb") as made:
                made.write(b"theirs\n")
        shown = "memory/knowledge/kit/n\\xe9.conflict-0123456789ab.txt"
        assert [c["path"] for c in status(a)["conflicts"]] == [shown, shown]
        with a.client() as client:
            refused = client.delete("/v1/sync/conflicts", params={"path": shown})
        assert refused.status_code == 409, refused.text
        assert sorted(os.listdir(folder)) == sorted(
            [b"SKILL.md", b"n\xe9.conflict-0123456789ab.txt", b"n\\xe9.conflict-0123456789ab.txt"]
        )


def test_a_file_name_that_is_no_utf8_stops_no_sync(tmp_path: Path) -> None:
    """A probe: a folder named by hand with a Latin-1 byte (``caf\\xe9``) made health answer
    500, and once history committed it, every sync of that machine failed on decoding
    git's output; a file so named that reached the remote blocked every other machine."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(b, "kit", "a hammer\n")
        root = os.fsencode(b.data_dir)
        os.makedirs(root + b"/memory/knowledge/caf\xe9")
        with open(root + b"/memory/knowledge/caf\xe9/SKILL.md", "wb") as made:
            made.write(b"---\nname: cafe\ndescription: x\n---\nhi\n")
        with open(root + b"/memory/knowledge/kit/n\xe9.txt", "wb") as made:
            made.write(b"nails\n")
        with b.client() as client:
            wait_for(lambda: bool(client.get("/v1/health").json()["brokenFiles"]), "reported")
            [broken] = client.get("/v1/health").json()["brokenFiles"]
            assert broken["path"] == "memory/knowledge/caf\\xe9/SKILL.md", broken
        sync(b)
        sync(a)
        for daemon in (a, b):
            kit = os.fsencode(daemon.data_dir) + b"/memory/knowledge/kit/n\xe9.txt"
            with open(kit, "rb") as carried:
                assert carried.read() == b"nails\n"
            with daemon.client() as client:
                assert client.get("/v1/health").status_code == 200
        write(a, "later", "a saw\n")
        sync(a)
        sync(b)
        assert read(b, "later") is not None


def test_a_conflict_in_a_file_named_in_no_utf8_is_listed_and_settled(tmp_path: Path) -> None:
    """A probe: a conflict file under a name that is no UTF-8 made ``POST /v1/sync`` and
    ``GET /v1/sync/status`` answer 500 on every machine that had it (its path could not be
    written as JSON), and no request could name it to settle it."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kit", "a hammer\n")
        notes = b"/memory/knowledge/kit/n\xe9.txt"
        with open(os.fsencode(a.data_dir) + notes, "wb") as made:
            made.write(b"nails\n")
        wait_for(lambda: committed(a), "a's file is committed")
        sync(a)
        sync(b)
        for daemon, text in ((a, b"screws\n"), (b, b"bolts\n")):
            with open(os.fsencode(daemon.data_dir) + notes, "wb") as edited:
                edited.write(text)
        wait_for(lambda: committed(a) and committed(b), "both edits are committed")
        sync(a)
        [conflict] = sync(b)["conflicts"]
        shown = "memory/knowledge/kit/n\\xe9"
        assert conflict["entry"] == shown + ".txt"
        assert conflict["path"].startswith(f"{shown}.conflict-") and conflict["path"].endswith(
            ".txt"
        )
        assert conflict["text"] == "screws\n" and conflict["entryText"] == "bolts\n"
        assert status(b)["conflicts"] == [conflict]
        with b.client() as client:
            done = client.delete(
                "/v1/sync/conflicts", params={"path": conflict["path"], "keep": "other"}
            )
            assert done.status_code == 204, done.text
        with open(os.fsencode(b.data_dir) + notes, "rb") as kept:
            assert kept.read() == b"screws\n"
        assert status(b)["conflicts"] == []


def test_a_conflict_in_a_file_without_a_suffix_is_settled_in_that_file(tmp_path: Path) -> None:
    """A probe: a skill's ``Makefile`` changed on both machines was kept aside as
    ``Makefile.conflict-<commit>.md``, read as a conflict of ``Makefile.md``: the status
    said the entry was gone, and "take the other" wrote a new ``Makefile.md``."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        rel = make_skill(a, "build-it") + "/Makefile"
        (a.data_dir / rel).write_text("all:\n\tmake one\n")
        wait_for(lambda: committed(a), "a's Makefile is committed")
        sync(a)
        sync(b)
        (a.data_dir / rel).write_text("all:\n\tmake two\n")
        (b.data_dir / rel).write_text("all:\n\tmake three\n")
        wait_for(lambda: committed(a) and committed(b), "both edits are committed")
        sync(a)
        [conflict] = sync(b)["conflicts"]
        assert conflict["entry"] == rel and conflict["path"].startswith(f"{rel}.conflict-")
        assert conflict["entryText"] == "all:\n\tmake three\n"
        assert conflict["text"] == "all:\n\tmake two\n"
        with b.client() as client:
            done = client.delete(
                "/v1/sync/conflicts", params={"path": conflict["path"], "keep": "other"}
            )
            assert done.status_code == 204, done.text
        folder = b.data_dir / "skills/agent_learned_skills/build-it"
        assert sorted(p.name for p in folder.iterdir()) == ["Makefile", "SKILL.md"]
        assert (b.data_dir / rel).read_text() == "all:\n\tmake two\n"


def test_the_other_s_text_taken_into_an_archived_entry_stays_archived(tmp_path: Path) -> None:
    """A probe: "take the other" on an entry archived since its conflict wrote the other
    machine's live file over the archived copy: the archive's time and reason were gone."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kites", BODY)
        sync(a)
        sync(b)
        patch(a, "kites", body=BODY.replace("line two", "line two, as A says"))
        patch(b, "kites", body=BODY.replace("line two", "line two, as B says"))
        sync(a)
        sync(b)
        with b.client() as client:
            archived = client.post("/v1/memories/knowledge/kites/archive", json={"reason": "done"})
            assert archived.status_code == 200, archived.text
            [conflict] = status(b)["conflicts"]
            assert conflict["entry"] == "memory/archived/kites/SKILL.md", conflict
            done = client.delete(
                "/v1/sync/conflicts", params={"path": conflict["path"], "keep": "other"}
            )
            assert done.status_code == 204, done.text
            kept = client.get("/v1/memories/knowledge/kites", params={"archived": "true"})
        assert kept.status_code == 200, kept.text
        assert "as A says" in kept.json()["body"]
        text = (b.data_dir / "memory/archived/kites/SKILL.md").read_text()
        assert "archived_at:" in text and "archive_reason: done" in text, text


def test_each_machine_says_which_one_merged_a_conflict_round_after_round(tmp_path: Path) -> None:
    """A probe: ``mergedOn`` was read from the newest commit adding the conflict file, and a
    later merge adds it too: the machine that merged said another had, the other said it
    had itself, and the Sync tab labelled the two texts the wrong way round."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kites", BODY)
        sync(a)
        sync(b)
        patch(a, "kites", body=BODY.replace("line two", "line two, as A says"))
        patch(b, "kites", body=BODY.replace("line two", "line two, as B says"))
        sync(b)
        [merged] = sync(a)["conflicts"]  # a merges: the entry keeps a's text
        a_id = status(a)["machine"]
        assert merged["mergedOn"] is None and "as A says" in merged["entryText"]
        for round_ in range(2):  # later rounds, each machine with a write of its own
            write(b, f"b-{round_}", "more\n")
            sync(b)  # b merges a's merge with its write: that merge adds the file too
            write(a, f"a-{round_}", "more\n")
            sync(a)  # and a merges b's
            sync(b)
            [seen_on_a] = status(a)["conflicts"]
            [seen_on_b] = status(b)["conflicts"]
            assert seen_on_a["mergedOn"] is None, seen_on_a
            assert seen_on_b["mergedOn"] == a_id, seen_on_b
            assert "as A says" in seen_on_b["entryText"] and "as B says" in seen_on_b["text"]
        # Archived, the entry takes its conflict file along: a review saw the move's
        # commit read as the file's first, and every machine took the merge for its own.
        with b.client() as client:
            archived = client.post("/v1/memories/knowledge/kites/archive", json={})
            assert archived.status_code == 200, archived.text
        sync(b)
        sync(a)
        [seen_on_a] = status(a)["conflicts"]
        [seen_on_b] = status(b)["conflicts"]
        assert "archived" in seen_on_b["path"] and seen_on_b["mergedOn"] == a_id, seen_on_b
        assert seen_on_a["mergedOn"] is None, seen_on_a


def test_a_conflict_kept_beside_a_file_being_edited_names_its_machine(tmp_path: Path) -> None:
    """A probe: a conflict kept beside a file a person is editing (it does not parse yet)
    went into a commit of the sync request's own, which named no machine: every other
    machine took the merge for its own."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kites", BODY)
        sync(a)
        sync(b)
        patch(a, "kites", body=BODY.replace("line two", "line two, as A says"))
        sync(a)
        entry = b.data_dir / "memory/knowledge/kites/SKILL.md"
        entry.write_text(entry.read_text().replace("description:", "description: [half"))
        [aside] = sync(b)["conflicts"]  # b's file is b's; a's version goes beside it
        assert aside["mergedOn"] is None and "as A says" in aside["text"]
        with b.client() as client:  # a history read commits what is pending
            assert client.get("/v1/history").status_code == 200
        sync(b)
        [seen_on_a] = sync(a)["conflicts"]
        assert seen_on_a["mergedOn"] == status(b)["machine"], seen_on_a


def test_names_differing_only_in_case_become_one_entry(tmp_path: Path) -> None:
    """A probe: ``casey`` made on a and ``Casey`` on b were both kept by the sync, a pair
    the API refuses (one folder on a case-insensitive file system)."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "base", "x\n")
        sync(a)
        sync(b)
        write(a, "casey", "Casey likes tea.\n", tags=["a"])
        write(b, "Casey", "Casey likes coffee.\n", tags=["b"])
        sync(a)
        merged = sync(b)
        sync(a)
        for daemon in (a, b):  # one entry, spelt as on b, whose merge told the two as one
            names = sorted(p.name for p in (daemon.data_dir / "memory/knowledge").iterdir())
            assert names == ["Casey", "base"], names
        [conflict] = merged["conflicts"]
        assert conflict["entry"] == "memory/knowledge/Casey/SKILL.md"
        assert "coffee" in conflict["entryText"] and "tea" in conflict["text"]
        assert memory_files(a.data_dir) == memory_files(b.data_dir)


def test_two_memories_made_under_one_name_on_two_machines_are_both_kept(
    tmp_path: Path,
) -> None:
    """A probe: two intentions given one id the same day on two memories (ids carry no
    machine part before sync is on, nor on twin machines) merged into one, silently: their
    bodies are empty and the description went to whichever side was used last."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        for daemon, what in ((a, "renew the passport"), (b, "pay the rent")):
            with daemon.client(timeout=60.0) as client:
                made = client.post(
                    "/v1/memories/knowledge", json={"name": "todo", "description": what}
                )
            assert made.status_code == 201, made.text
        sync(a)
        merged = sync(b)
        sync(a)
        [conflict] = merged["conflicts"]
        assert "pay the rent" in conflict["entryText"] and "passport" in conflict["text"]
        assert memory_files(a.data_dir) == memory_files(b.data_dir)


def test_a_file_too_large_for_history_is_never_written_over_by_a_merge(tmp_path: Path) -> None:
    """A probe: a file in an entry's folder grew past the size history commits on b; a
    changed it (small, tracked); b's merge wrote a's version over b's 11 MB, no trace."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        write(a, "kites", "x\n")
        ref = Path("memory/knowledge/kites/ref.txt")
        (a.data_dir / ref).write_text("tracked v1\n")
        wait_for(lambda: committed(a), "a's file is committed")
        sync(a)
        sync(b)
        grown = "tracked v1\n" + "a line b grew\n" * 800_000  # 11 MB
        (b.data_dir / ref).write_text(grown)
        sync(b)
        (a.data_dir / ref).write_text("tracked v1\nedited on a\n")
        wait_for(lambda: committed(a), "a's edit is committed")
        sync(a)
        merged = sync(b)
        assert (b.data_dir / ref).read_text() == grown
        [beside] = (b.data_dir / ref).parent.glob("ref.conflict-*.txt")
        assert beside.read_text() == "tracked v1\nedited on a\n"
        assert [c["path"] for c in merged["conflicts"]] == [str(beside.relative_to(b.data_dir))]


def test_the_next_write_s_commit_names_only_its_own_files(tmp_path: Path) -> None:
    """A probe: after a sync brought b's edits of x1 and x2, a's next PATCH of y was
    committed as "POST /v1/sync, PATCH …: knowledge/x1, knowledge/x2, knowledge/y"."""
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        for name in ("x1", "x2", "y"):
            write(a, name, "one\n")
        sync(a)
        sync(b)
        for name in ("x1", "x2"):
            patch(b, name, body="two\n")
        sync(b)
        assert sync(a)["changed"] == 2
        patch(a, "y", body="three\n")
        wait_for(lambda: committed(a), "a's edit is committed")
        subject = git(a.data_dir, "log", "-1", "--format=%s").strip()
        assert subject == "PATCH /v1/memories/knowledge/y: knowledge/y", subject
