"""What the commands print: a memory's text reaches the terminal as text, never as one of
its commands; recall shows the archived conversations' lines too."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from somnid.cli._common import plain
from somnid.cli.history import commit_line
from somnid.cli.recall import render
from tests.cli.runner import daemon_env, somnid
from tests.daemon import Daemon, start_daemon

ESCAPES = "zebra \x1b[31mRED\x1b[0m \x1b]0;TITLE\x07 \x9b2J"


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    with start_daemon(tmp_path_factory.mktemp("cli-output") / "data") as running:
        with running.client() as client:
            made = client.post(
                "/v1/memories/knowledge",
                json={"name": "zebra", "description": ESCAPES, "body": "\x1b[2J\x1b[H cleared"},
            )
            assert made.status_code == 201, made.text
        folder = running.data_dir / "memory/knowledge/ev\x1b]0;OWNED\x07il"
        folder.mkdir()
        (folder / "SKILL.md").write_text("---\ndescription: x\n---\n\nx\n")
        yield running


def test_escape_sequences_in_memory_are_shown_not_obeyed(daemon: Daemon) -> None:
    # `somnid recall zebra` wrote the raw bytes: a memory could clear the screen, retitle
    # the terminal or hide lines; so could a folder's name in status and doctor.
    env = daemon_env(daemon)
    for args in (("recall", "zebra"), ("status",), ("history",)):
        run = somnid(env, *args)
        assert run.returncode == 0, run.stderr
        assert not [ch for ch in run.stdout if ch < " " and ch not in "\n\t"], args
        assert "\x9b" not in run.stdout and "\x07" not in run.stdout
    shown = somnid(env, "recall", "zebra").stdout
    assert "zebra \\u001b[31mRED\\u001b[0m \\u001b]0;TITLE\\u0007 \\u009b2J" in shown
    assert "ev\\u001b]0;OWNED\\u0007il" in somnid(env, "status").stdout
    refused = somnid(env, "recall", "--kind", "nope", "x")
    assert "\x1b" not in refused.stderr


def test_plain_keeps_lines_and_tabs_and_stays_json() -> None:
    assert plain("a\tb\nc\x00d\x7f") == "a\tb\nc\\u0000d\\u007f"


def test_recall_shows_the_lines_of_archived_conversations() -> None:
    # The daemon answered them in `lines`; the command printed "nothing found".
    answer = {
        "query": "Quokkazilla",
        "mode": "hybrid",
        "items": [],
        "lines": [
            {
                "log": "2026-12-01_s1",
                "role": "user",
                "speaker": "ou_1",
                "time": "2026-12-01T10:00:00+00:00",
                "text": "Our mascot is\\nQuokkazilla.",
                "score": 0.5,
            }
        ],
    }
    out = render(answer)
    assert "nothing found" not in out
    assert "1 lines of archived conversations" in out
    assert "ou_1 (2026-12-01_s1, 2026-12-01T10:00:00+00:00)" in out and "Quokkazilla" in out


def test_nothing_is_nothing() -> None:
    assert render({"query": "x", "mode": "keyword", "items": [], "lines": []}).startswith(
        "nothing found for 'x'"
    )


def test_a_folder_no_request_can_name_is_counted_nowhere(daemon: Daemon) -> None:
    # Health counted it (knowledge 2 of 1 listed) and doctor took it from the index's files
    # twice: "6 entries for 4 readable files → somnid reindex", which reindex never cleared.
    env = daemon_env(daemon)
    assert "knowledge 1" in somnid(env, "status").stdout
    doctor = somnid(env, "doctor")
    index = [line for line in doctor.stdout.splitlines() if " index " in f" {line} "]
    assert index and not any(line.startswith(("WARN", "FAIL")) for line in index), doctor.stdout


def test_history_names_who_once_and_revert_says_what_it_needs(daemon: Daemon) -> None:
    # "POST …/knowledge: POST …/knowledge: knowledge/zebra": the route was the author and
    # began the subject; and revert with nothing to revert printed to stdout, unprefixed.
    env = daemon_env(daemon)
    lines = somnid(env, "history").stdout.splitlines()
    made = [line for line in lines if "knowledge/zebra" in line]
    assert made and made[-1].count("POST /v1/memories/knowledge") == 1, lines
    bare = somnid(env, "revert")
    assert bare.returncode == 2 and bare.stdout == ""
    assert bare.stderr.strip() == "somnid: name a commit or --dream ID"


def test_reverting_a_dream_that_changed_no_memory_says_so(daemon: Daemon) -> None:
    # A probe: "reverted 980f2cede560 in None: " (a dream without a model wrote no memory).
    with daemon.client(timeout=120.0) as client:
        slept = client.post("/v1/sleep/run", json={"wait": True})
        assert slept.status_code == 200, slept.text
        dreams = client.get("/v1/history", params={"dreams": "true"}).json()["items"]
    dream_id = next(item["dreamId"] for item in dreams if item["dreamId"])
    run = somnid(daemon_env(daemon), "revert", "--dream", dream_id)
    assert run.returncode == 0, run.stderr
    assert "None" not in run.stdout and "it changed no memory" in run.stdout, run.stdout


def test_an_author_who_only_begins_the_subject_is_still_named() -> None:
    commit = {"id": "0123456789abcdef", "date": "2026-12-06", "author": "Al"}
    assert commit_line({**commit, "subject": "Also fix a typo"}).endswith("Al: Also fix a typo")
    route = "POST /v1/memories/knowledge"
    line = commit_line({**commit, "author": route, "subject": f"{route}: knowledge/x"})
    assert line.count(route) == 1


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["recall", "x", "--limit", "99"], "99 is not from 1 to 50"),
        (["recall", "x", "--limit", "0"], "0 is not from 1 to 50"),
        (["history", "--limit", "abc"], "'abc' is not a whole number"),
        (["history", "--limit", "201"], "201 is not from 1 to 200"),
    ],
)
def test_a_limit_out_of_the_api_s_bounds_is_a_bad_argument(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A probe: the daemon's 422 came back as exit 1 ("failed"), not 2 ("bad arguments").
    from somnid.cli import main

    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2 and said in capsys.readouterr().err
