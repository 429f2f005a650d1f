"""``somnid install-service``: run somnid as a systemd user service.

Writes ``$XDG_CONFIG_HOME/systemd/user/somnid.service`` (``~/.config/...``) from
:data:`TEMPLATE` (the same text as ``deploy/systemd/somnid.service``; a test keeps them
equal) with ExecStart naming the somnid it runs from, ReadWritePaths naming the data dir,
``TimeoutStopSec`` above ``shutdown_timeout_s``, and the ``SOMNID_*`` settings of this shell;
checks it with ``systemd-analyze verify`` where that exists; then ``daemon-reload``,
``enable`` and ``restart`` through ``systemctl --user``, unless told not to. Whatever it
could not do, it says, with the command to do it by hand.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from somnid.cli._common import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, lock_holder
from somnid.config import Settings, xdg_config_home
from somnid.memory.text import control_char
from somnid.store.atomic import write_atomic

UNIT_NAME = "somnid.service"
# TimeoutStopSec = shutdown_timeout_s + this: room to close after draining. A stop during an
# upkeep pass at 100k entries took 24-26 s on 2 cores (git commits what the pass wrote).
STOP_MARGIN_S = 50
SYSTEMCTL_TIMEOUT_S = 120.0
# Carried into the unit so the service sees what this shell sees; the token never is.
_CARRIED_ENV = ("XDG_CONFIG_HOME", "XDG_DATA_HOME")
_SECRET_ENV = ("SOMNID_TOKEN",)

TEMPLATE = """# somnid as a systemd user service.
#
# `somnid install-service` writes this unit to ~/.config/systemd/user/somnid.service, with
# ExecStart naming the somnid it was run from, ReadWritePaths naming the data dir and
# TimeoutStopSec above shutdown_timeout_s, then enables and starts it. By hand, for a somnid
# installed in ~/.local/bin (pipx, pip --user) on the default data dir:
#   cp deploy/systemd/somnid.service ~/.config/systemd/user/
#   mkdir -p ~/.local/share/somnid
#   systemctl --user daemon-reload && systemctl --user enable --now somnid
#   journalctl --user -u somnid -f
# To keep it running while you are logged out: loginctl enable-linger "$USER"

[Unit]
Description=somnid, a memory daemon for LLM agents
# A crash loop stops after 5 starts in 5 minutes; `systemctl --user reset-failed somnid`.
StartLimitIntervalSec=300
StartLimitBurst=5

[Service]
# READY=1 once it listens (the data dir is locked and open), STOPPING=1 when it drains.
Type=notify
NotifyAccess=main
ExecStart=%h/.local/bin/somnid serve
Restart=on-failure
RestartSec=5
# 2: a bad configuration, 3: another somnid holds the data dir. A restart fixes neither.
RestartPreventExitStatus=2 3
# On SIGTERM somnid drains requests for shutdown_timeout_s (10 s), then closes the index and
# session logs and commits what a cut-short dream or upkeep pass wrote (24-26 s at 100k
# entries on 2 cores): leave it time to finish before systemd kills it.
TimeoutStopSec=60
# The token and every memory file are the user's alone.
UMask=0077

# Sandbox. PrivateUsers= gives the user manager the namespace the file system rules need.
PrivateUsers=yes
ProtectSystem=strict
ReadWritePaths=%h/.local/share/somnid
PrivateTmp=yes
PrivateDevices=yes
NoNewPrivileges=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK

[Install]
WantedBy=default.target
"""


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    install = commands.add_parser(
        "install-service",
        parents=[common],
        help="write the systemd user unit, enable and start it",
    )
    install.add_argument(
        "--no-enable", action="store_true", help="write (and check) the unit only; start nothing"
    )
    install.add_argument(
        "--dry-run",
        action="store_true",
        help="print the unit and what would be done; change nothing",
    )
    install.set_defaults(run=run)


def unit_path() -> Path:
    return xdg_config_home() / "systemd" / "user" / UNIT_NAME


def exec_argv(args: argparse.Namespace) -> list[str]:
    """How the service starts this somnid: its script, else this Python with ``-m somnid``;
    then ``serve`` and the options given on this command line."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name == "somnid":
        found = argv0 if argv0.is_absolute() else shutil.which(str(argv0))
        command = [str(Path(found).absolute())] if found else [sys.executable, "-m", "somnid"]
    else:
        command = [sys.executable, "-m", "somnid"]
    if args.config is not None:
        command += ["--config", str(args.config.expanduser().absolute())]
    command.append("serve")
    for option in ("data_dir", "host", "port"):
        value = getattr(args, option, None)
        if value is not None:
            if isinstance(value, Path):
                value = value.expanduser().absolute()
            command += [f"--{option.replace('_', '-')}", str(value)]
    return command


_SECRET_WORDS = frozenset(
    {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "DSN", "CREDENTIALS", "AUTH"}
)


def secret_like(key: str) -> bool:
    """Whether an environment variable of this name may hold a secret (``…_API_KEY``, a
    DSN); ``…_ENV`` names another variable, and holds none."""
    words = key.upper().split("_")
    return words[-1] != "ENV" and not _SECRET_WORDS.isdisjoint(words)


def _credentials(value: str) -> bool:
    """Whether a value is a URL with a user's password or token (``https://me:pat@host``)."""
    head = value.partition("://")[2].partition("/")[0]
    return "@" in head and ":" in head.partition("@")[0]


def environment() -> dict[str, str]:
    """The settings this shell gives somnid through its environment (the token excepted)."""
    carried = {
        key: value
        for key, value in os.environ.items()
        if key.startswith("SOMNID_") and key not in _SECRET_ENV
    }
    for key in _CARRIED_ENV:
        if os.environ.get(key):
            carried[key] = os.environ[key]
    for key, value in carried.items():
        ch = control_char(value)
        if ch is not None:  # a line break would start a directive of its own in the unit
            raise CliError(
                f"{key} holds a control character ({ord(ch):#x}); a unit's Environment= is"
                " one line: set that value in the config file instead",
                EXIT_USAGE,
            )
    return dict(sorted(carried.items()))


def render(command: list[str], settings: Settings, env: dict[str, str]) -> str:
    """The unit for ``command`` on ``settings.data_dir``, with ``env`` set."""
    text = TEMPLATE
    header = (
        "# Written by `somnid install-service`: run it again after moving somnid or the data\n"
        "# dir, or changing shutdown_timeout_s. The template: deploy/systemd/somnid.service.\n"
    )
    text = header + text
    program, *arguments = command
    words = [_quote(program), *(_quote(arg, dollars=True) for arg in arguments)]
    text = _set(text, "ExecStart", " ".join(words))
    writable = [_quote(str(settings.data_dir.absolute()))]
    if in_temporary(settings.data_dir):  # a private /tmp would be another, empty folder;
        text = _set(text, "PrivateTmp", "no")  # and the shared one is read-only but named
        writable += [str(top) for top in TEMPORARY]  # (a purge, a sync write files there)
    text = _set(text, "ReadWritePaths", " ".join(writable))
    text = _set(text, "TimeoutStopSec", str(settings.shutdown_timeout_s + STOP_MARGIN_S))
    if env:
        lines = "".join(f"Environment={_quote(f'{k}={v}', always=True)}\n" for k, v in env.items())
        text = text.replace("UMask=0077\n", f"UMask=0077\n{lines}", 1)
    return text


TEMPORARY = (Path("/tmp"), Path("/var/tmp"))


def in_temporary(data_dir: Path) -> bool:
    """Whether ``data_dir`` is under /tmp or /var/tmp: the service's own private /tmp
    (PrivateTmp=yes) would hide it, and the system empties these folders (at boot, or
    after days unused)."""
    return any(
        where == top or top in where.parents
        for where in (data_dir.absolute(), data_dir.resolve())  # a link out of /tmp, or in
        for top in TEMPORARY
    )


def exec_path(unit: str) -> str | None:
    """The program an installed unit starts (for doctor)."""
    match = re.search(r"^ExecStart=(.+)$", unit, re.MULTILINE)
    if match is None:
        return None
    try:
        words = shlex.split(match.group(1).replace("%%", "%"))
    except ValueError:
        return None
    return words[0].lstrip("-@:+!") if words else None


def systemctl(*args: str) -> subprocess.CompletedProcess[str] | None:
    """``systemctl --user ARGS``, or None where there is no systemctl."""
    exe = shutil.which("systemctl")
    if exe is None:
        return None
    try:
        return subprocess.run(
            [exe, "--user", *args],
            capture_output=True,
            text=True,
            timeout=SYSTEMCTL_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(
            args, 124, "", f"systemctl --user {' '.join(args)} timed out"
        )


def verify(path: Path) -> tuple[bool, str] | None:
    """``systemd-analyze verify`` on the unit: (no complaints, what it said), or None where
    there is no systemd-analyze."""
    exe = shutil.which("systemd-analyze")
    if exe is None:
        return None
    result = subprocess.run(
        [exe, "verify", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    said = (result.stdout + result.stderr).strip()
    return result.returncode == 0 and not said, said


def run(args: argparse.Namespace, settings: Settings) -> int:
    env = environment()
    command = exec_argv(args)
    unit = render(command, settings, env)
    path = unit_path()
    secret = [key for key in _SECRET_ENV if key in os.environ]
    if in_temporary(settings.data_dir):
        print(
            f"somnid: warning: the data dir {settings.data_dir} is under /tmp or /var/tmp, "
            "which the system empties (at boot, or after days unused): memories kept there "
            "are lost. Choose another with --data-dir before relying on it.",
            file=sys.stderr,
        )
    if args.dry_run:
        sys.stdout.write(unit)
        print(f"\n# would write {path}", file=sys.stderr)
        if not args.no_enable:
            print(f"# then: {_by_hand()}", file=sys.stderr)
        return EXIT_OK
    settings.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # ReadWritePaths needs it
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="somnid-unit-") as scratch:
        trial = Path(scratch) / path.name  # checked before it takes the place of one
        trial.write_text(unit, encoding="utf-8")
        checked = verify(trial)
    if checked is not None and not checked[0]:
        raise CliError(
            f"systemd-analyze verify complains about the unit (nothing written):\n{checked[1]}"
        )
    existed = path.exists()
    linked = os.readlink(path) if path.is_symlink() else None
    target = _through_link(path)
    # Readable by its owner alone: it may carry a key or a DSN's password from this shell
    # (a probe: SOMNID_EMBED_API_KEY written into a unit of mode 0644).
    write_atomic(target, unit.encode("utf-8"), mode=0o600)
    through = f" (→ {target})" if target != path else ""
    through = f" (in place of a link to {linked})" if linked and not through else through
    print(f"{'updated' if existed else 'wrote'} {path}{through}")
    print(f"  runs: {' '.join(command)}")
    carried = [key for key, value in env.items() if secret_like(key) or _credentials(value)]
    if carried:
        print(f"  note: {', '.join(carried)} written into the unit, which only you may read (0600)")
    for key in secret:
        print(
            f"  note: {key} is set in this shell but not written into the unit; the service "
            f"uses {settings.data_dir / 'token'} unless the config file sets `token`"
        )
    if args.no_enable:
        print(f"not enabled (--no-enable). To start it: {_by_hand()}")
        return EXIT_OK
    return _enable(settings)


def _through_link(path: Path) -> Path:
    """Where the unit is written: the file a link at ``path`` names when it is the person's
    own unit (their dotfiles keep it there; replacing the link cut it from them), ``path``
    itself otherwise (no link; a link that names nothing, a loop, a file they may not
    write, or somnid's template itself, which stays as it is: the link is replaced). A unit
    masked (a link to /dev/null) is refused: writing it would not unmask it."""
    if not path.is_symlink():
        return path
    try:
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):  # dangling, or a loop (RuntimeError before 3.13)
        return path
    if target == Path(os.devnull):
        raise CliError(
            f"{path} is masked (a link to {os.devnull}); nothing written: "
            f"`systemctl --user unmask {UNIT_NAME}` first"
        )
    try:
        own = target.is_file() and target.stat().st_uid == os.getuid()
        template = own and target.read_text("utf-8", "replace") == TEMPLATE
    except OSError:
        return path
    return target if own and os.access(target, os.W_OK) and not template else path


def _enable(settings: Settings) -> int:
    reload = systemctl("daemon-reload")
    if reload is None:
        raise CliError(
            "the unit is written, but there is no systemctl here: without systemd, run "
            "`somnid serve` yourself"
        )
    if reload.returncode != 0:
        raise CliError(
            "the unit is written, but the systemd user manager cannot be reached "
            f"({_first_line(reload.stderr)}). Where it runs (a login session, or after "
            f"`loginctl enable-linger $USER`), start the service with: {_by_hand()}"
        )
    holder = lock_holder(settings.data_dir)
    if holder is not None:
        main = systemctl("show", "-p", "MainPID", "--value", UNIT_NAME)
        if main is None or main.stdout.strip() != str(holder):
            enabled = systemctl("enable", UNIT_NAME)
            raise CliError(
                f"somnid{f' (pid {holder})' if holder > 0 else ''} already runs on "
                f"{settings.data_dir} outside systemd, so the service cannot start. The unit "
                f"is written{' and enabled' if enabled and enabled.returncode == 0 else ''}; "
                "stop that somnid, then `systemctl --user start somnid`"
            )
    for step in (("enable", UNIT_NAME), ("restart", UNIT_NAME)):
        result = systemctl(*step)
        if result is None or result.returncode != 0:
            detail = _first_line(result.stderr) if result is not None else "no systemctl"
            status = systemctl("status", "--no-pager", "-n", "15", UNIT_NAME)
            if status is not None and status.stdout:
                print(status.stdout.rstrip(), file=sys.stderr)
            raise CliError(
                f"`systemctl --user {' '.join(step)}` failed: {detail}. "
                "`journalctl --user -u somnid -e` shows why"
            )
    state = systemctl("is-active", UNIT_NAME)
    active = state.stdout.strip() if state is not None else "unknown"
    print(f"somnid.service is enabled and {active}")
    print("  status: systemctl --user status somnid")
    print("  logs:   journalctl --user -u somnid -f")
    print("  token:  somnid token")
    print("  to keep it running while you are logged out: loginctl enable-linger $USER")
    return EXIT_OK if active == "active" else EXIT_FAILED


def _by_hand() -> str:
    return "systemctl --user daemon-reload && systemctl --user enable --now somnid"


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "no detail"


def _set(text: str, key: str, value: str) -> str:
    pattern = re.compile(rf"^{key}=.*$", re.MULTILINE)
    assert pattern.search(text), key
    return pattern.sub(lambda _: f"{key}={value}", text, count=1)


_PLAIN = re.compile(r"^[A-Za-z0-9_@%+=:,./$-]+$")


def _quote(value: str, *, dollars: bool = False, always: bool = False) -> str:
    """One word of a unit file line, taken literally: ``%`` (specifiers) doubled, quoted
    when it has blanks or quotes, and ``$`` doubled where systemd expands variables
    (``dollars``: command-line arguments after the program)."""
    escaped = value.replace("%", "%%")
    if dollars:
        escaped = escaped.replace("$", "$$")
    if not always and _PLAIN.match(value):
        return escaped
    escaped = escaped.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'
