"""README's "Try it" block, run as written against a fresh real daemon: every curl line of it
through bash and the real curl, with only the port and the ETag put in (``~`` is a fresh
HOME whose ``~/.local/share/somnid`` is the daemon's data dir). The block is read from
README.md at test time, so a README that stops working fails here."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.daemon import start_daemon

README = Path(__file__).parents[2] / "README.md"
ETAG_PLACEHOLDER = "<etag from the last answer>"
pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="no curl")


def try_it_block() -> str:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## Try it\n+```sh\n(.*?)^```", text, re.S | re.M)
    assert match, "README.md has no '## Try it' section with a sh block"
    return match.group(1)


def commands(block: str) -> list[str]:
    """The block's commands, each whole: continued lines joined, a quote left open on one
    line closed on a later one, comments between commands dropped."""
    out: list[str] = []
    buffer = ""
    for line in block.splitlines():
        if not buffer and (not line.strip() or line.lstrip().startswith("#")):
            continue
        buffer += line + "\n"
        if line.endswith("\\"):
            continue
        try:
            shlex.split(buffer, comments=True)
        except ValueError:  # a quote still open: the command goes on
            continue
        out.append(buffer.strip())
        buffer = ""
    assert not buffer, f"unfinished command in README: {buffer!r}"
    return out


def body(output: str) -> str:
    """What follows the headers of a ``curl -i`` answer (the whole output otherwise)."""
    if output.startswith("HTTP/"):
        parts = re.split(r"\r?\n\r?\n", output, maxsplit=1)
        return parts[1] if len(parts) == 2 else ""
    return output


def test_the_blocks_commands_are_read_whole() -> None:
    found = commands(try_it_block())
    assert found[0].startswith("curl -s localhost:7373/v1/health")
    assert found[1].startswith('AUTH="Authorization: Bearer')
    assert sum(c.startswith("curl ") for c in found) >= 18
    create = next(c for c in found if "-X POST localhost:7373/v1/memories/knowledge " in c)
    assert create.endswith('"fields": {"tags": ["ops"]}}\'')


def test_readme_try_it_runs_against_a_fresh_daemon(tmp_path: Path) -> None:
    home = tmp_path / "home"
    data = home / ".local/share/somnid"  # where README's ~/.local/share/somnid points
    data.parent.mkdir(parents=True)
    with start_daemon(data) as daemon:
        port = daemon.base_url.rsplit(":", 1)[1]
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LC_ALL": "C.UTF-8"}
        assignments: list[str] = []
        etag: str | None = None
        ran: dict[str, str] = {}
        for command in commands(try_it_block()):
            if command.startswith("claude mcp add"):
                continue  # needs Claude Code installed; the curl after it calls /mcp itself
            line = command.replace("localhost:7373", f"localhost:{port}")
            if ETAG_PLACEHOLDER in line:
                assert etag, "no ETag came before the If-Match line"
                line = line.replace(ETAG_PLACEHOLDER, etag)
            if re.match(r"^[A-Z_]+=", line):
                assignments.append(line)
                continue
            done = subprocess.run(
                ["bash", "-c", "set -eu\n" + "\n".join([*assignments, line])],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
                check=False,
            )
            assert done.returncode == 0, (command, done.stderr)
            output = done.stdout
            ran[command] = output
            found = re.search(r'(?im)^etag: "([0-9a-f]+)"', output)
            if found:
                etag = found.group(1)
            answer = body(output).strip()
            if answer.startswith("{"):
                parsed = json.loads(answer)
                assert not str(parsed.get("type", "")).startswith("urn:somnid:problem"), (
                    command,
                    parsed,
                )
        outputs = list(ran.items())

    def said(start: str, end: str = "") -> str:
        return next(out for cmd, out in outputs if cmd.startswith(start) and cmd.endswith(end))

    assert json.loads(said("curl -s localhost:7373/v1/health"))["status"]
    assert "Tuesday to Thursday only." in said("cat ~/.local/share/somnid/memory/knowledge")
    read_back = said("curl -si")
    assert read_back.startswith("HTTP/1.1 200")
    assert json.loads(body(read_back))["name"] == "deploy-window"
    patched = json.loads(said('curl -s -H "$AUTH" -X PATCH'))
    assert patched["meta"]["owner"] == "platform"
    assert "items" in json.loads(said('curl -s -H "$AUTH" -X POST localhost:7373/v1/recall'))
    assert "Renew the TLS certificate" in said('curl -s -H "$AUTH" localhost:7373/mcp')
    listed = json.loads(said('curl -s -H "$AUTH" \'localhost:7373/v1/memories?kind='))
    assert [item["name"] for item in listed["items"]] == ["deploy-window"]
    restored = said('curl -s -H "$AUTH" -X POST localhost:7373/v1/memories/', "/restore")
    assert json.loads(restored)["archived"] is False
    assert len(outputs) >= 19
