"""The checks behind ``somnid doctor`` that read the data dir: its folder, broken files,
the model and the index; each returns findings. The process checks (lock, daemon, token,
service) are in :mod:`somnid.cli.doctor_process`.

With a daemon running on the data dir the checks ask it (health, index status); without one
they read the data dir themselves, without changing anything in it.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import astuple, dataclass, field
from pathlib import Path
from typing import Any, Literal

from somnid.cli._client import DaemonClient
from somnid.config import Settings
from somnid.config_checks import original_variables

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
class Context:
    settings: Settings
    client: DaemonClient
    health: dict[str, Any] | None = None  # the daemon on this data dir, if one answers
    lock_pid: int | None = None  # who holds the data-dir lock, if anyone
    token_ok: bool = False
    index_status: dict[str, Any] | None = None  # the daemon's GET /v1/index/status
    broken: list[str] = field(default_factory=list)  # relative paths


def config_finding(path: Path, explicit: bool) -> list[Finding]:
    found = [
        Finding("OK", "config", f"{path} loads")
        if path.is_file()
        else Finding("OK", "config", f"no config file at {path}: defaults and SOMNID_* variables")
    ]
    if (unread := original_variables()) is not None:
        found.append(Finding("WARN", "config", unread, "set somnid's own, or unset them"))
    return found


def data_dir_check(ctx: Context) -> list[Finding]:
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
    if os.statvfs(root).f_flag & os.ST_RDONLY:
        return [
            Finding(
                "FAIL",
                "data dir",
                f"{root} is on a read-only file system",
                "remount it read-write, or point data_dir (SOMNID_DATA_DIR) at a writable "
                "folder; no chown or reindex helps",
            )
        ]
    if not os.access(root, os.W_OK | os.X_OK):
        return [
            Finding(
                "FAIL",
                "data dir",
                f"{root} is not writable by {user_name()}",
                f"give it back: `chown -R {user_name()} {root}` (or `chmod u+rwx {root}`)",
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


def modes_check(ctx: Context) -> list[Finding]:
    """Paths under the data dir other local users could read (the daemon repairs them)."""
    from somnid.store.modes import loose_paths

    root = ctx.settings.data_dir
    if not root.is_dir():
        return []
    loose = loose_paths(root)
    if not loose:
        return [Finding("OK", "file modes", f"{root} is private (folders 0700, files 0600)")]
    return [
        Finding(
            "WARN",
            "file modes",
            f"{len(loose)} path(s) under {root} can be read by other local users",
            f"`chmod -R go-rwx {root}` (the daemon also does it when it starts)",
            [f"{path} {path.lstat().st_mode & 0o777:o}" for path in loose[:20]],
        )
    ]


def broken_check(ctx: Context) -> list[Finding]:
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
    from somnid.services.status import broken_files
    from somnid.store.layout import Layout

    return broken_files(Layout(settings.data_dir), _clock(settings))


def model_check(ctx: Context) -> list[Finding]:
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


def index_check(ctx: Context) -> list[Finding]:
    from somnid.memory.names import is_name
    from somnid.recall.offline import INDEX_FILE, INDEXED_KINDS, index_file_problem, indexed_files
    from somnid.store.layout import Layout

    backend, kind = index_backend_finding(ctx)
    if not ctx.settings.data_dir.is_dir():
        return [backend]
    if (problem := index_file_problem(ctx.settings)) is not None:
        return [backend, Finding("FAIL", "index", problem, "then `somnid reindex`")]
    layout = Layout(ctx.settings.data_dir)
    files = indexed_files(layout, _clock(ctx.settings))
    located = (layout.classify(layout.root / path) for path in ctx.broken)
    # Of the files counted: a folder whose name no request can give is never one of them.
    broken = sum(
        1
        for where in located
        if where is not None and where[0] in INDEXED_KINDS and is_name(where[1])
    )
    expected = files - broken
    if ctx.index_status is not None:
        return [backend, _index_online(ctx.index_status, expected)]
    if ctx.health is not None or kind == "postgres":
        # The running daemon's index is what counts, and its status said nothing: the file
        # read here (deleted while it ran, or not yet written) would tell another story.
        return [backend]  # counted per daemon: the daemon's own status says how many
    return [backend, _index_offline(layout.index_dir / INDEX_FILE, expected, ctx.settings)]


def index_backend_finding(ctx: Context) -> tuple[Finding, str]:
    """Which backend holds the index, its server's version and extension, and what to do
    when the server cannot be reached: the daemon's view when one runs, else our own."""
    from somnid.recall.offline import describe_index

    seen = (ctx.health or {}).get("index")
    if seen is None:
        info = describe_index(ctx.settings)
        backend, version, extension = info.backend, info.server_version, info.extension
        state = "ok" if info.reachable else "unavailable"
        detail = "; ".join(filter(None, (info.location, info.error)))
    else:
        backend, version, extension = seen["backend"], seen["serverVersion"], seen["extension"]
        state, detail = seen["status"], seen["detail"] or "see the daemon's log"
    return _backend_finding(backend, version, extension, state, detail), backend


def _backend_finding(
    backend: str, version: str | None, extension: str | None, state: str, detail: str
) -> Finding:
    if state == "degraded":  # reached, and it says what is wrong (a file deleted under it)
        return Finding(
            "FAIL",
            "backend",
            f"{backend}: {detail}",
            "do what it says; `journalctl --user -u somnid -e` shows the daemon's log",
        )
    if state != "ok" and backend == "sqlite":
        return Finding(
            "FAIL",
            "backend",
            f"sqlite: the index file cannot be opened ({detail})",
            "check the index folder's permissions and free space; `somnid reindex` (with the "
            "daemon stopped) rebuilds it from the files",
        )
    if state != "ok":
        return Finding(
            "FAIL",
            "backend",
            f"{backend}: the server cannot be reached ({detail})",
            "start the PostgreSQL server, or check index.dsn and ~/.pgpass; meanwhile recall "
            "answers 503 index_unavailable, writes still land in the files and are indexed "
            "when it is back",
        )
    if backend == "postgres" and not extension:
        return Finding(
            "FAIL",
            "backend",
            f"postgres {version}: no pgvector extension in this database",
            "install pgvector on the server and run CREATE EXTENSION vector as its owner "
            "(somnid creates it itself when its role may)",
        )
    shown = ", ".join(filter(None, (version, extension)))
    return Finding("OK", "backend", f"{backend} index ({shown})" if shown else backend)


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
    from somnid.recall.offline import SCHEMA_VERSION, inspect_file

    if not path.exists():
        return Finding("OK", "index", "not built yet: the daemon builds it on first start")
    try:
        report = inspect_file(path)
    except sqlite3.Error as exc:
        return Finding(
            "FAIL",
            "index",
            f"{path} cannot be read: {exc}",
            "`somnid reindex` (with the daemon stopped) deletes and rebuilds it from the files",
        )
    check, version, entries, unembedded = astuple(report)
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


def _clock(settings: Settings) -> Any:
    from somnid.memory.clock import SystemClock, resolve_timezone

    return SystemClock(resolve_timezone(settings.timezone))


def user_name() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())
