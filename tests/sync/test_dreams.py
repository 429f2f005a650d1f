"""Two machines that talk about the same thing and dream over it (a scripted LLM): each
dream goes out by itself when it ends, the second machine pulls it before dreaming (so it
does not write what the first already learnt again), each journal's name carries its
machine, and both end with the same memory, no conflict."""

from __future__ import annotations

import functools
from pathlib import Path

from tests.dream.test_http_backend_dreams import backend_env, consolidating, llm_server
from tests.sync.helpers import (
    bare_remote,
    fsck,
    git,
    machine,
    memory_files,
    no_markers,
    read,
    sync,
    wait_for,
    write,
)

PUSH_AFTER = ("SOMNID_SYNC__PUSH_AFTER_S", "0.2")
TURNS = [
    {"role": "user", "text": "I only drink green tea, no sugar please."},
    {"role": "agent", "text": "Green tea without sugar, noted."},
]


def _pushed(remote: Path, path_end: str) -> bool:
    return path_end in git(remote, "ls-tree", "-r", "--name-only", "main")


def test_two_machines_dream_and_sync(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    with llm_server(consolidating) as llm:
        llm_env = backend_env("callback", llm.url)
        with (
            machine(tmp_path / "a" / "data", remote, *llm_env, PUSH_AFTER) as a,
            machine(tmp_path / "b" / "data", remote, *llm_env) as b,
        ):
            journals, created = [], []
            for daemon in (a, b):
                with daemon.client(timeout=120.0) as client:
                    said = client.post("/v1/sessions/t1/messages", json={"messages": TURNS})
                    assert said.status_code == 200, said.text
                    done = client.post("/v1/sleep/run", json={"trigger": "test", "wait": True})
                    assert done.status_code == 200, done.text
                    result = done.json()["result"]
                    assert result["status"] == "deep_sleep", result
                    created.append(result["created"])
                    machine_id = client.get("/v1/sync/status").json()["machine"]
                # The log it dreamt over has a name of this machine's (an episode's source
                # names one log everywhere).
                assert result["processed"] and all(
                    stem.endswith(f"-{machine_id}") for stem in result["processed"]
                ), result["processed"]
                [own] = (daemon.data_dir / "memory/dream-log").glob(f"*-{machine_id}.md")
                journals.append(own.name)
                # The dream's commit goes out by itself once the dream has ended.
                wait_for(functools.partial(_pushed, remote, own.name), "the dream pushed")
            assert journals[0] != journals[1]
            assert created[1] < created[0], created  # b dreamt over what a had learnt
            sync(a)
            sync(b)
            merged = sync(a)
            assert merged["conflicts"] == [] and (merged["ahead"], merged["behind"]) == (0, 0)
            for daemon in (a, b):
                tea = read(daemon, "tea-preference")
                assert tea is not None and "Green tea, no sugar." in tea["body"]
                names = {p.name for p in (daemon.data_dir / "memory/dream-log").glob("*.md")}
                assert names == set(journals)
                no_markers(daemon.data_dir)
                fsck(daemon.data_dir)
            assert memory_files(a.data_dir) == memory_files(b.data_dir)

            # A write goes out by itself a moment later (sync.push_after_s), unasked.
            write(a, "pushed-unasked", "no round was asked for\n")
            wait_for(
                functools.partial(_pushed, remote, "pushed-unasked/SKILL.md"), "pushed unasked"
            )
