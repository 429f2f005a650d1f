"""Every command that talks to the daemon, against a real one, as a person runs them."""

from __future__ import annotations

import json
import stat
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.cli.runner import daemon_env, somnid, somnid_on_terminal
from tests.daemon import Daemon, start_daemon
from tests.history.helpers import wait_for

FACTS = {
    "deploy window": ("when we deploy", "Deploys go out Tuesday to Thursday, never on Friday."),
    "coffee order": ("what the user drinks", "A flat white with oat milk, no sugar."),
    "db backups": ("how backups run", "Postgres is dumped nightly at 02:00 to the NAS."),
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    root = tmp_path_factory.mktemp("cli-daemon")
    with start_daemon(root / "data") as running:
        with running.client() as client:
            for name, (description, body) in FACTS.items():
                answer = client.post(
                    "/v1/memories/knowledge",
                    json={"name": name, "description": description, "body": body},
                )
                assert answer.status_code == 201, answer.text
        yield running


@pytest.fixture(scope="module")
def env(daemon: Daemon) -> dict[str, str]:
    return daemon_env(daemon)


def test_status_shows_health_index_and_sleep(env: dict[str, str], daemon: Daemon) -> None:
    human = somnid(env, "status")
    assert human.returncode == 0, human.stderr
    out = human.stdout
    assert out.startswith("somnid 0.")
    assert daemon.base_url in out and str(daemon.data_dir) in out
    assert "knowledge 3" in out and "broken files  none" in out
    assert "\nindex\n" in out and "entries   3" in out
    assert "\nsleep\n" in out and "sleeping      no" in out

    machine = somnid(env, "status", "--json")
    document = json.loads(machine.stdout)
    assert document["health"]["counts"]["knowledge"] == 3
    assert document["index"]["entries"] == 3
    assert document["sleep"]["sleeping"] is False


def test_recall_finds_filters_and_explains(env: dict[str, str]) -> None:
    found = somnid(env, "recall", "can", "we", "deploy", "on", "friday?")
    assert found.returncode == 0, found.stderr
    lines = found.stdout.splitlines()
    assert "for 'can we deploy on friday?' (keyword)" in lines[0]
    assert "[knowledge] deploy-window" in lines[1]
    assert "memory/knowledge/deploy-window/SKILL.md" in found.stdout

    as_json = json.loads(somnid(env, "recall", "--json", "--explain", "oat milk").stdout)
    assert as_json["items"][0]["name"] == "coffee-order"
    assert as_json["items"][0]["components"]["keyword"] > 0

    only_episodes = somnid(env, "recall", "--kind", "episode", "deploy")
    assert only_episodes.returncode == 0
    assert only_episodes.stdout.startswith("nothing found for 'deploy'")


def test_a_refused_request_is_one_line_with_the_problem(env: dict[str, str]) -> None:
    # A probe: `--project ""` (a variable left unset) searched every project.
    unset = somnid(env, "recall", "--project", "", "deploy")
    assert unset.returncode == 1
    said = unset.stderr.strip()
    assert "\n" not in said and said.startswith(
        "somnid: POST /v1/recall failed: 422 validation_error: body.project: "
    ), said
    # A limit out of the API's bounds is refused before it is sent: a bad argument.
    too_many = somnid(env, "recall", "--limit", "99", "deploy")
    assert too_many.returncode == 2 and "99 is not from 1 to 50" in too_many.stderr


def test_a_wrong_token_says_where_the_token_came_from(daemon: Daemon) -> None:
    wrong = somnid(daemon_env(daemon, SOMNID_TOKEN="not-the-token"), "sleep", "status")
    assert wrong.returncode == 1
    message = wrong.stderr.strip()
    assert "\n" not in message and "Traceback" not in message
    # The daemon cannot prove it holds that token, so it is not even sent (a squatter on the
    # port looks the same: tests/cli/test_listener_check.py).
    assert "could not prove it holds the token" in message and "not sent" in message
    assert "the configuration (token / SOMNID_TOKEN)" in message
    assert "started with another token" in message


def test_an_emptied_token_file_is_called_empty_and_doctor_says_how_to_mend_it(
    daemon: Daemon,
) -> None:
    """An ops probe: an emptied token file was said not to exist, and doctor advised a
    `somnid token --rotate` that is refused while the daemon runs."""
    path = daemon.data_dir / "token"
    kept = path.read_bytes()
    try:
        path.write_text("\n")
        result = somnid(daemon_env(daemon), "sleep", "status")
        assert f"no token: {path} is empty" in result.stderr, result.stderr
        doctor = somnid(daemon_env(daemon), "doctor").stdout
        assert (
            f"{path} is empty" in doctor
            and "stop the daemon, then `somnid token --rotate`" in doctor
        )
    finally:
        path.write_bytes(kept)


def test_sleep_run_wait_status_and_cancel(env: dict[str, str]) -> None:
    status = somnid(env, "sleep", "status")
    assert status.returncode == 0, status.stderr
    assert "sleeping" in status.stdout and "eligibility" in status.stdout

    ran = somnid(env, "sleep", "run", "--wait")
    assert ran.returncode == 0, ran.stderr
    # No LLM is reachable: the sleep does maintenance only, and says so.
    assert "maintenance" in ran.stdout and "journal" in ran.stdout

    as_json = json.loads(somnid(env, "sleep", "status", "--json").stdout)
    assert as_json["lastDream"]["trigger"] == "cli"

    cancel = somnid(env, "sleep", "cancel")
    assert cancel.returncode == 0 and cancel.stdout.strip() == "no dream was running"


def test_reindex_rebuilds_through_the_daemon_with_a_progress_bar(
    env: dict[str, str], daemon: Daemon
) -> None:
    run = somnid_on_terminal(env, "reindex")
    assert run.returncode == 0, run.screen
    screen = run.screen.replace("\r\n", "\n")
    assert "reading files" in screen and "[" + "#" * 30 + "] 100% 3/3" in screen
    assert "\x1b[2K" in screen  # redrawn in place, one line
    assert "index rebuilt: 3 entries from 3 files" in screen
    with daemon.client() as client:
        rebuild = client.get("/v1/index/status").json()["rebuild"]
        assert rebuild["state"] == "done" and rebuild["files"] == rebuild["done"] == 3
        hits = client.post("/v1/recall", json={"query": "backups"}).json()["items"]
        assert [hit["name"] for hit in hits] == ["db-backups"]

    piped = somnid(env, "reindex", "--no-wait")
    assert piped.returncode == 0 and "rebuild started in the daemon" in piped.stdout


def test_token_prints_the_daemons_token_and_keeps_it(env: dict[str, str], daemon: Daemon) -> None:
    printed = somnid(env, "token")
    assert printed.returncode == 0 and printed.stdout == f"{daemon.token}\n"
    rotate = somnid(env, "token", "--rotate")
    assert rotate.returncode == 3
    assert "keeps the token it started with: stop it, rotate, start it again" in rotate.stderr
    assert somnid(env, "token").stdout == printed.stdout


def test_doctor_finds_nothing_wrong_with_a_running_daemon(
    env: dict[str, str], daemon: Daemon
) -> None:
    token = daemon.data_dir / "token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    with daemon.client() as client:  # the index's first sync after the writes is over
        wait_for(lambda: client.get("/v1/index/status").json()["syncState"] == "ready")
    doctor = somnid(env, "doctor")
    assert doctor.returncode == 0, doctor.stdout
    lines = {
        line.split()[1]: line
        for line in doctor.stdout.splitlines()
        if line[:4] in ("OK  ", "WARN", "FAIL")
    }
    assert lines["daemon"].startswith("OK") and daemon.base_url in lines["daemon"]
    assert lines["lock"].startswith("OK") and f"pid {daemon.process.pid}" in lines["lock"]
    assert lines["token"].startswith("OK") and "the daemon accepts it" in lines["token"]
    assert lines["index"].startswith("OK") and "3 entries for 3 readable files" in lines["index"]
    assert "FAIL" not in doctor.stdout


def test_commands_refuse_a_daemon_that_serves_another_data_dir(
    daemon: Daemon, tmp_path: Path
) -> None:
    other = daemon_env(daemon, SOMNID_DATA_DIR=str(tmp_path / "elsewhere"))
    reindex = somnid(other, "reindex")
    assert reindex.returncode == 1
    # Health shows a caller without the token no path: "another data dir", not where.
    assert f"serves another data dir, not {tmp_path / 'elsewhere'}" in reindex.stderr
    assert str(daemon.data_dir) not in reindex.stderr
    doctor = somnid(other, "doctor")
    assert doctor.returncode == 1
    assert "is served by another somnid, for another data dir" in doctor.stdout
    assert not (tmp_path / "elsewhere").exists()  # doctor changes nothing


def test_install_service_will_not_start_beside_a_running_daemon(
    daemon: Daemon, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "systemctl.log"
    stand_in = bin_dir / "systemctl"
    stand_in.write_text(f'#!/bin/sh\necho "$@" >> {log}\ncase "$*" in *MainPID*) echo 0;; esac\n')
    stand_in.chmod(0o755)
    env = daemon_env(daemon, PATH=str(bin_dir))
    result = somnid(env, "install-service")
    assert result.returncode == 1
    assert (
        f"(pid {daemon.process.pid}) already runs on {daemon.data_dir} outside systemd"
        in result.stderr
    )
    assert log.read_text().splitlines() == [
        "--user daemon-reload",
        "--user show -p MainPID --value somnid.service",
        "--user enable somnid.service",
    ]


def test_the_cli_finds_a_daemon_started_on_another_port_by_itself(tmp_path: Path) -> None:
    """The daemon says where it listens in <data dir>/daemon.json: a command with no
    --port (and no SOMNID_PORT) reaches it; the file goes when the daemon stops."""
    with start_daemon(tmp_path / "data") as daemon:
        env = daemon_env(daemon)
        del env["SOMNID_PORT"]
        listening = json.loads((daemon.data_dir / "daemon.json").read_text())
        assert listening["url"] == daemon.base_url and listening["port"] != 7373
        assert stat.S_IMODE((daemon.data_dir / "daemon.json").stat().st_mode) == 0o600
        done = somnid(env, "status")
        assert done.returncode == 0, done.stderr
        log = daemon.log()
        assert f"listening on {daemon.base_url}: the API and its docs at" in log
        assert daemon.stop() == 0
        assert not (daemon.data_dir / "daemon.json").exists()
        # Nothing listens now: the command says so, at the address it would have used.
        gone = somnid(env, "status")
        assert gone.returncode != 0 and "not running" in gone.stderr


class _Refusing(BaseHTTPRequestHandler):
    """An LLM endpoint that lists its models and refuses every chat."""

    def do_GET(self) -> None:
        self._send(200, b'{"data": []}')

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._send(400, b'{"error": {"message": "no such model"}}')

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return None


def test_sleep_run_wait_exits_1_when_the_dream_fails(tmp_path: Path) -> None:
    # It exited 0 whatever the dream's outcome: a script could not tell.
    llm = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=llm.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    settings = (
        ("SOMNID_DREAM__LLM", "openai"),
        ("SOMNID_DREAM__OPENAI__BASE_URL", f"http://127.0.0.1:{llm.server_address[1]}/v1"),
        ("SOMNID_DREAM__OPENAI__MODEL", "m"),
        ("SOMNID_DREAM__ENABLED", "false"),
    )
    try:
        with start_daemon(tmp_path / "data", *settings) as running:
            with running.client() as client:
                said = {"messages": [{"role": "user", "text": "I moved to Lyon in May."}]}
                assert client.post("/v1/sessions/s1/messages", json=said).status_code == 200
                assert client.post("/v1/sessions/s1/close").status_code == 200
            ran = somnid(daemon_env(running), "sleep", "run", "--wait")
            assert ran.returncode == 1, ran.stdout + ran.stderr
            assert "interrupted" in ran.stdout and "no such model" in ran.stdout
            as_json = somnid(daemon_env(running), "sleep", "run", "--wait", "--json")
            assert as_json.returncode == 1
            assert json.loads(as_json.stdout)["result"]["status"] == "interrupted"
    finally:
        llm.shutdown()
        llm.server_close()


def test_text_the_output_cannot_hold_is_shown_as_question_marks(
    env: dict[str, str], daemon: Daemon
) -> None:
    # `PYTHONIOENCODING=latin-1 somnid recall 部署` ended in a UnicodeEncodeError traceback.
    with daemon.client() as client:
        made = client.post(
            "/v1/memories/knowledge",
            json={"name": "部署窗口", "description": "周二到周四部署", "body": "周五不部署。"},
        )
        assert made.status_code == 201, made.text
    shown = somnid({**env, "PYTHONIOENCODING": "latin-1"}, "recall", "部署")
    assert shown.returncode == 0, shown.stderr
    assert "Traceback" not in shown.stderr and "??" in shown.stdout
