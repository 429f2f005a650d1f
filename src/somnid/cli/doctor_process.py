"""The checks behind ``somnid doctor`` about processes: the data-dir lock, the daemon and its
port, the token, and the systemd service; each returns findings.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
from pathlib import Path

from somnid.cli._client import base_url, dir_shown, same_dir, serve_command, token_source
from somnid.cli._common import CliError, lock_holder
from somnid.cli.doctor_checks import Context, Finding, user_name
from somnid.config import Settings


def lock_check(ctx: Context) -> list[Finding]:
    if not ctx.settings.data_dir.is_dir():
        return []
    ctx.lock_pid = lock_holder(ctx.settings.data_dir)
    if ctx.lock_pid is None:
        return [Finding("OK", "lock", "free: no somnid runs on this data dir")]
    who = f"pid {ctx.lock_pid}" if ctx.lock_pid > 0 else "a process"
    name = _process_name(ctx.lock_pid) if ctx.lock_pid > 0 else None
    named = f" ({name})" if name else ""
    return [Finding("OK", "lock", f"held by {who}{named}: a somnid runs on this data dir")]


def daemon_check(ctx: Context) -> list[Finding]:
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
                    f"{url} is served by another somnid, for {dir_shown(health['dataDir'])}",
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
            f"start it: `{serve_command(settings)}`, or `systemctl --user start somnid` as a "
            "service",
        )
    ]


def token_check(ctx: Context) -> list[Finding]:
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
                    f"`chown {user_name()} {path}`",
                )
            )
        elif not path.read_text(encoding="utf-8", errors="replace").strip():
            findings.append(
                Finding(
                    "FAIL",
                    "token",
                    f"{path} is empty",
                    "stop the daemon, then `somnid token --rotate` (a daemon holds the token it "
                    "read at start; `--rotate` is refused while it runs)"
                    if ctx.health is not None
                    else "`somnid token --rotate`, or delete it: the daemon writes one on start",
                )
            )
        else:
            findings.append(Finding("OK", "token", f"{path}, mode 0600"))
    if ctx.health is not None and all(f.level == "OK" for f in findings):
        try:  # a route that needs the token and nothing else (not the index's server)
            ctx.client.get("/v1/tools")
        except CliError as exc:
            said = exc.message.removesuffix("; see `somnid doctor`")  # this is doctor
            return [Finding("FAIL", "token", said, "restart the daemon so it reads this token")]
        with contextlib.suppress(CliError):  # its server away: the index's check says so
            ctx.index_status = ctx.client.get("/v1/index/status")
        ctx.token_ok = True
        findings[-1].message += "; the daemon accepts it"
        with contextlib.suppress(CliError):  # with the token: its broken files, its paths
            ctx.health = ctx.client.get("/v1/health")
    return findings


def service_check(ctx: Context) -> list[Finding]:
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
