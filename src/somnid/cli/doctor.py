"""``somnid doctor``: look at everything that makes somnid work, say what is wrong and what
to do about it.

Each check ends OK, WARN (works, but look) or FAIL (broken: the exit status is 1). With a
daemon running on the data dir, the checks ask it (health, index status); without one they
read the data dir themselves, without changing anything in it.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import shutil
import socket
import sqlite3
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from somnid.cli._client import DaemonClient, base_url, same_dir, token_source
from somnid.cli._common import EXIT_FAILED, EXIT_OK, CliError, lock_holder
from somnid.config import Settings, default_config_path

Level = Literal["OK", "WARN", "FAIL"]
LOW_DISK_BYTES = 200 * 1024 * 1024


@dataclass
class Finding:
    level: Level
    check: str
    message: str
    fix: str | None = None
    details: list[str] = field(default_factory=list)


@dataclass
class _Context:
    settings: Settings
    client: DaemonClient
    health: dict[str, Any] | None = None  # the daemon on this data dir, if one answers
    lock_pid: int | None = None  # who holds the data-dir lock, if anyone
    token_ok: bool = False
    index: dict[str, Any] | None = None
    broken: list[str] = field(default_factory=list)  # relative paths


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    doctor = commands.add_parser(
        "doctor", parents=[common], help="check the set-up and say how to fix what is wrong"
    )
    doctor.add_argument("--json", action="store_true", help="the findings as JSON")
    doctor.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    config_path = args.config or default_config_path()
    findings = [_config(config_path, args.config is not None)]
    with DaemonClient(settings, timeout=10.0) as client:
        ctx = _Context(settings, client)
        for check in (_data_dir, _lock, _daemon, _token, _broken, _model, _index, _service):
            findings.extend(check(ctx))
    return report(findings, as_json=args.json)


def run_broken_config(args: argparse.Namespace, error: Exception) -> int:
    """The configuration does not load: that is the finding; nothing else can be checked."""
    path = args.config or default_config_path()
    finding = Finding(
        "FAIL",
        "config",
        f"the configuration does not load: {error}",
        f"fix {path} or the SOMNID_* variables (docs/configuration.md lists every setting)",
    )
    return report([finding], as_json=args.json)


def report(findings: list[Finding], *, as_json: bool) -> int:
    failed = sum(f.level == "FAIL" for f in findings)
    warned = sum(f.level == "WARN" for f in findings)
    if as_json:
        print(json.dumps({"findings": [asdict(f) for f in findings], "ok": not failed}))
        return EXIT_FAILED if failed else EXIT_OK
    width = max(len(f.check) for f in findings)
    for f in findings:
        print(f"{f.level:<5} {f.check:<{width}}  {f.message}")
        pad = " " * (6 + width + 2)
        for line in f.details:
            print(f"{pad}  {line}")
        if f.fix:
            print(f"{pad}→ {f.fix}")
    if failed or warned:
        print(f"\n{failed} failed, {warned} to look at")
    else:
        print("\nall good")
    return EXIT_FAILED if failed else EXIT_OK


# --------------------------------------------------------------------------- checks


def _config(path: Path, explicit: bool) -> Finding:
    if path.is_file():
        return Finding("OK", "config", f"{path} loads")
    return Finding("OK", "config", f"no config file at {path}: defaults and SOMNID_* variables")


def _data_dir(ctx: _Context) -> list[Finding]:
    root = ctx.settings.data_dir
    if not root.exists():
        return [
            Finding(
                "WARN",
                "data dir",
                f"{root} does not exist yet",
                "`somnid serve` (or `somnid install-service`) creates it",
            )
        ]
    if not root.is_dir():
        return [
            Finding(
                "FAIL", "data dir", f"{root} is not a directory", "move it away or set data_dir"
            )
        ]
    if not os.access(root, os.W_OK | os.X_OK):
        return [
            Finding(
                "FAIL",
                "data dir",
                f"{root} is not writable by {_user()}",
                f"give it back: `chown -R {_user()} {root}` (or `chmod u+rwx {root}`)",
            )
        ]
    free = shutil.disk_usage(root).free
    if free < LOW_DISK_BYTES:
        return [
            Finding(
                "WARN",
                "data dir",
                f"{root} has only {free // (1024 * 1024)} MiB free",
                "free some space: writes fail with disk_full (507) when it runs out",
            )
        ]
    return [Finding("OK", "data dir", f"{root} is writable, {free / 1024**3:.1f} GiB free")]


def _lock(ctx: _Context) -> list[Finding]:
    if not ctx.settings.data_dir.is_dir():
        return []
    ctx.lock_pid = lock_holder(ctx.settings.data_dir)
    if ctx.lock_pid is None:
        return [Finding("OK", "lock", "free: no somnid runs on this data dir")]
    who = f"pid {ctx.lock_pid}" if ctx.lock_pid > 0 else "a process"
    name = _process_name(ctx.lock_pid) if ctx.lock_pid > 0 else None
    named = f" ({name})" if name else ""
    return [Finding("OK", "lock", f"held by {who}{named}: a somnid runs on this data dir")]


def _daemon(ctx: _Context) -> list[Finding]:
    settings, url = ctx.settings, base_url(ctx.settings)
    try:
        health = ctx.client.health()
    except CliError as exc:
        return [Finding("FAIL", "daemon", exc.message, _port_fix(settings))]
    if health is not None:
        if not same_dir(health["dataDir"], settings.data_dir):
            return [
                Finding(
                    "FAIL",
                    "daemon",
                    f"{url} is served by another somnid, for {health['dataDir']}",
                    f"stop that one, or give this data dir another port ({_port_fix(settings)})",
                )
            ]
        ctx.health = health
        pid = f", pid {ctx.lock_pid}" if ctx.lock_pid and ctx.lock_pid > 0 else ""
        return [
            Finding(
                "OK",
                "daemon",
                f"somnid {health['version']} answers at {url}{pid}: {health['status']}",
            )
        ]
    problem = _port_taken(settings.host, settings.port)
    if problem is not None:
        return [Finding("FAIL", "daemon", problem, _port_fix(settings))]
    if ctx.lock_pid:
        return [
            Finding(
                "WARN",
                "daemon",
                f"a somnid holds the data dir but nothing answers at {url}",
                "it may still be starting (try again in a few seconds), or it listens on another "
                "port: `journalctl --user -u somnid -e` shows what it did",
            )
        ]
    return [
        Finding(
            "WARN",
            "daemon",
            f"somnid is not running (port {settings.port} is free)",
            "start it: `somnid serve`, or `systemctl --user start somnid` as a service",
        )
    ]


def _token(ctx: _Context) -> list[Finding]:
    settings = ctx.settings
    findings: list[Finding] = []
    if settings.token is not None:
        if not settings.token.get_secret_value().strip():
            return [
                Finding(
                    "FAIL", "token", "the configured token is empty", "set a real one, or remove it"
                )
            ]
        findings.append(Finding("OK", "token", "set in the configuration"))
    else:
        path = Path(token_source(settings))
        try:
            info = path.stat()
        except FileNotFoundError:
            if ctx.health is not None:
                return [
                    Finding(
                        "FAIL",
                        "token",
                        f"{path} is missing, so no client can get in",
                        "restart the daemon to write a new one (`systemctl --user restart somnid`)",
                    )
                ]
            return [
                Finding(
                    "WARN",
                    "token",
                    f"no token yet at {path}",
                    "the daemon writes it on first start; `somnid token` creates it now",
                )
            ]
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            findings.append(
                Finding(
                    "FAIL",
                    "token",
                    f"{path} can be read by others (mode {mode:04o})",
                    f"`chmod 600 {path}` (the daemon also tightens it when it starts); "
                    "if others may have read it: `somnid token --rotate` with the daemon stopped",
                )
            )
        elif info.st_uid != os.getuid():
            findings.append(
                Finding(
                    "WARN",
                    "token",
                    f"{path} belongs to uid {info.st_uid}, not to you",
                    f"`chown {_user()} {path}`",
                )
            )
        elif not path.read_text(encoding="utf-8", errors="replace").strip():
            findings.append(
                Finding(
                    "FAIL",
                    "token",
                    f"{path} is empty",
                    "delete it and restart the daemon, or `somnid token --rotate`",
                )
            )
        else:
            findings.append(Finding("OK", "token", f"{path}, mode 0600"))
    if ctx.health is not None and all(f.level == "OK" for f in findings):
        try:
            ctx.index = ctx.client.get("/v1/index/status")
        except CliError as exc:
            return [
                Finding("FAIL", "token", exc.message, "restart the daemon so it reads this token")
            ]
        ctx.token_ok = True
        findings[-1].message += "; the daemon accepts it"
    return findings


def _broken(ctx: _Context) -> list[Finding]:
    if ctx.health is not None and ctx.token_ok:
        broken = [(item["path"], item["reason"]) for item in ctx.health["brokenFiles"]]
    elif ctx.settings.data_dir.is_dir():
        broken = _scan_broken(ctx.settings)
    else:
        return []
    ctx.broken = [path for path, _ in broken]
    if not broken:
        return [Finding("OK", "memory files", "every memory file reads")]
    return [
        Finding(
            "FAIL",
            "memory files",
            f"{len(broken)} file(s) cannot be read; somnid leaves them alone until they are fixed",
            "repair each by hand (its front-matter between the --- lines must be valid YAML) "
            "or move it out of the data dir; the daemon picks up the fix at once",
            [f"{path}: {reason}" for path, reason in broken],
        )
    ]


def _scan_broken(settings: Settings) -> list[tuple[str, str]]:
    from somnid.memory.clock import SystemClock, resolve_timezone
    from somnid.memory.kinds import Kind
    from somnid.store.layout import Layout
    from somnid.store.memories import MemoryStore

    store = MemoryStore(Layout(settings.data_dir), SystemClock(resolve_timezone(settings.timezone)))
    store.scan(tuple(Kind))
    return [(item.path, item.reason) for item in store.broken()]


def _model(ctx: _Context) -> list[Finding]:
    embed = ctx.settings.embed
    if embed.provider == "off":
        return [
            Finding(
                "OK", "model", "embed.provider = off: recall uses keywords only, hints stay silent"
            )
        ]
    if embed.provider == "http":
        if not (embed.base_url and embed.model and embed.dim):
            return [
                Finding(
                    "FAIL",
                    "model",
                    "embed.provider = http needs embed.base_url, embed.model and embed.dim",
                    "set them in the configuration",
                )
            ]
        return [
            Finding("OK", "model", f"HTTP embedder {embed.model} at {embed.base_url} (not called)")
        ]
    if ctx.health is not None:
        vector = ctx.health["vector"]
        if vector["status"] == "unavailable":
            return [
                Finding(
                    "FAIL",
                    "model",
                    f"the daemon could not load the model: {vector['detail']}",
                    "`somnid model install`, then restart the daemon; "
                    "`journalctl --user -u somnid` has the whole error",
                )
            ]
        detail = f" ({vector['detail']})" if vector.get("detail") else ""
        return [Finding("OK", "model", f"{vector['status']} in the daemon{detail}")]
    return [_model_offline(ctx.settings)]


def _model_offline(settings: Settings) -> Finding:
    from somnid.embed.e5convert import default_model_dir, model_is_installed
    from somnid.embed.onnx import OnnxEmbedder

    custom = settings.embed.model_dir
    model_dir = custom or default_model_dir(settings.models_dir)
    if custom is None and not model_is_installed(settings.models_dir):
        return Finding(
            "WARN",
            "model",
            f"not installed in {model_dir}",
            "`somnid model install` (offline, a few seconds); the daemon also does it on first "
            "start, and recall uses keywords until it is ready",
        )
    try:
        embedder = OnnxEmbedder.load(model_dir, threads=1)
    except Exception as exc:
        fix = (
            "check embed.model_dir: it needs model.onnx, tokenizer.json and config.json"
            if custom
            else f"reinstall it: `rm -r {model_dir} && somnid model install`"
        )
        return Finding("FAIL", "model", f"{model_dir} does not load: {exc}", fix)
    try:
        return Finding(
            "OK", "model", f"{embedder.name} loads from {model_dir} (dim {embedder.dim})"
        )
    finally:
        embedder.close()


def _index(ctx: _Context) -> list[Finding]:
    from somnid.recall.index import INDEXED_KINDS
    from somnid.store.layout import Layout
    from somnid.store.memories import MemoryStore

    if not ctx.settings.data_dir.is_dir():
        return []
    layout = Layout(ctx.settings.data_dir)
    store = MemoryStore(layout, _clock(ctx.settings))
    files = sum(1 for kind in INDEXED_KINDS for _ in store.files(kind))
    located = (layout.classify(layout.root / path) for path in ctx.broken)
    broken = sum(1 for where in located if where is not None and where[0] in INDEXED_KINDS)
    expected = files - broken
    if ctx.index is not None:
        return [_index_online(ctx.index, expected)]
    return [_index_offline(layout.index_dir / "index.sqlite", expected, ctx.settings)]


def _index_online(index: dict[str, Any], expected: int) -> Finding:
    if index["syncState"] != "ready":
        return Finding("OK", "index", f"{index['syncState']}: {index['entries']} entries so far")
    entries = index["entries"]
    waiting = ""
    if index["pending"]:
        waiting = f"; {index['pending']} texts wait for their vector (embedding goes on)"
    if entries != expected:
        return Finding(
            "WARN",
            "index",
            f"{entries} entries for {expected} readable files{waiting}",
            "`somnid reindex` reads every file again",
        )
    return Finding(
        "OK",
        "index",
        f"{entries} entries for {expected} readable files, "
        f"{index['vectors']} with vectors{waiting}",
    )


def _index_offline(path: Path, expected: int, settings: Settings) -> Finding:
    from somnid.recall.db import SCHEMA_VERSION

    if not path.exists():
        return Finding("OK", "index", "not built yet: the daemon builds it on first start")
    try:
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        try:
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            entries = conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            unembedded = conn.execute(
                "SELECT COUNT(DISTINCT embed_hash) FROM entries"
                " WHERE embed_hash NOT IN (SELECT embed_hash FROM vectors)"
            ).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return Finding(
            "FAIL",
            "index",
            f"{path} cannot be read: {exc}",
            "`somnid reindex` (with the daemon stopped) deletes and rebuilds it from the files",
        )
    if check != "ok":
        return Finding(
            "FAIL",
            "index",
            f"{path} is damaged: {check}",
            "`somnid reindex` (with the daemon stopped) rebuilds it",
        )
    if version != SCHEMA_VERSION:
        return Finding(
            "OK", "index", f"schema {version}, not {SCHEMA_VERSION}: rebuilt at the next start"
        )
    vectors = ""
    if unembedded and settings.embed.provider != "off":
        vectors = f"; {unembedded} texts have no vector yet (embedded when the daemon runs)"
    if entries != expected:
        return Finding(
            "WARN",
            "index",
            f"{entries} entries for {expected} readable files{vectors}",
            "the daemon catches up when it starts; `somnid reindex` does it now",
        )
    return Finding("OK", "index", f"{entries} entries for {expected} readable files{vectors}")


def _service(ctx: _Context) -> list[Finding]:
    from somnid.cli.service import exec_path, systemctl, unit_path

    path = unit_path()
    if not path.exists():
        return [
            Finding(
                "OK",
                "service",
                "not installed as a systemd service (optional: `somnid install-service`)",
            )
        ]
    exe = exec_path(path.read_text(encoding="utf-8"))
    if exe is not None and not os.access(exe, os.X_OK):
        return [
            Finding(
                "FAIL",
                "service",
                f"{path} runs {exe}, which is gone",
                "run `somnid install-service` again from the somnid it should run",
            )
        ]
    state = systemctl("is-active", "somnid.service")
    if state is None or state.returncode not in (0, 3, 4) or not state.stdout.strip():
        return [
            Finding(
                "OK",
                "service",
                f"installed at {path}; the systemd user manager is not reachable from here",
            )
        ]
    active = state.stdout.strip()
    if active == "failed":
        return [
            Finding(
                "FAIL",
                "service",
                "the somnid service failed",
                "`journalctl --user -u somnid -e` says why; then `systemctl --user restart somnid`",
            )
        ]
    if active == "active" and ctx.health is None:
        return [
            Finding(
                "WARN",
                "service",
                f"active, but nothing answers at {base_url(ctx.settings)}",
                "does the service use another port or data dir? `systemctl --user cat somnid`",
            )
        ]
    return [Finding("OK", "service", f"installed at {path}: {active}")]


# --------------------------------------------------------------------------- helpers


def _port_taken(host: str, port: int) -> str | None:
    """Why somnid could not listen on host:port, or None if it could."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return f"port {port} on {host} is taken by another program"
            return f"cannot listen on {host}:{port}: {exc.strerror}"
    return None


def _port_fix(settings: Settings) -> str:
    return (
        f"`ss -ltnp 'sport = :{settings.port}'` shows who holds it; stop that, or set "
        "`port = …` in the configuration (SOMNID_PORT)"
    )


def _process_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        return None


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _clock(settings: Settings) -> Any:
    from somnid.memory.clock import SystemClock, resolve_timezone

    return SystemClock(resolve_timezone(settings.timezone))
