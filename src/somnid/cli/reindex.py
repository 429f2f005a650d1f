"""``somnid reindex``: read and index every memory file again, with a progress bar.

With a daemon running on the data dir, it rebuilds (``POST /v1/index/rebuild``) and this
follows ``GET /v1/index/status``; recall keeps answering meanwhile. With none, it opens the
index itself under the data-dir lock; an index file SQLite cannot read is deleted first (it
is derived: everything in it comes from the files).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from somnid.cli._client import DaemonClient, base_url, dir_shown, same_dir
from somnid.cli._common import EXIT_LOCKED, CliError, Progress
from somnid.config import Settings

POLL_S = 0.2
Status = dict[str, Any]


def add_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    reindex = commands.add_parser(
        "reindex", parents=[common], help="read and index every memory file again"
    )
    reindex.add_argument(
        "--vectors", action="store_true", help="also drop stored vectors and embed every text again"
    )
    reindex.add_argument(
        "--no-wait", action="store_true", help="start it in the daemon and return at once"
    )
    reindex.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    with DaemonClient(settings, timeout=30.0) as client:
        health = client.health()
        if health is not None:
            if not same_dir(health["dataDir"], settings.data_dir):
                raise CliError(
                    f"the somnid at {client.url} serves {dir_shown(health['dataDir'])}, not "
                    f"{settings.data_dir}: point --port or --data-dir at the same one"
                )
            return _through_daemon(client, args)
    return _offline(settings, args)


def _through_daemon(client: DaemonClient, args: argparse.Namespace) -> int:
    answer = client.post("/v1/index/rebuild", {"vectors": args.vectors})
    if not answer["started"]:
        print("a rebuild is already running in the daemon; following it")
    if args.no_wait:
        print(f"rebuild started in the daemon at {client.url} (`somnid status` shows it)")
        return 0
    try:
        status = _follow(lambda: client.get("/v1/index/status"), time.sleep)
    except KeyboardInterrupt:
        print("\nstopped following; the rebuild goes on in the daemon")
        return 130
    print(_summary(status))
    return 0


def _follow(fetch: Callable[[], Status], pause: Callable[[float], None]) -> Status:
    progress = Progress()
    while not _draw_files(status := fetch(), progress):
        pause(POLL_S)
    while not _draw_vectors(status := fetch(), progress):
        pause(POLL_S)
    progress.done()
    return status


def _draw_files(status: Status, progress: Progress) -> bool:
    """Draw the file phase; True once every file was read."""
    rebuild = status.get("rebuild")
    if rebuild is None:
        raise CliError("the daemon reports no rebuild: is it an older somnid?")
    if rebuild["state"] == "failed":
        progress.done()
        raise CliError(f"the rebuild failed: {rebuild['error']}")
    if rebuild["state"] == "queued":
        progress.update("waiting", None, "for the sync in progress")
        return False
    files = rebuild["files"] or 0
    fraction = 1.0 if rebuild["state"] == "done" or not files else rebuild["done"] / files
    progress.update("reading files", fraction, f"{rebuild['done']}/{files}")
    return bool(rebuild["state"] == "done")


def _draw_vectors(status: Status, progress: Progress) -> bool:
    """Draw the embedding phase; True once no text waits for its vector."""
    state = status["embedState"]
    if state in ("off", "failed"):
        return True
    if state == "starting":
        progress.update("loading model", None)
        return False
    entries, pending = status["entries"], status["pending"]
    fraction = 1.0 if not entries else min(status["vectors"], entries) / entries
    progress.update("embedding", 1.0 if pending == 0 else fraction, f"{pending} texts left")
    return bool(pending == 0)


def _summary(status: Status) -> str:
    rebuild = status["rebuild"] or {}
    report = status.get("lastReport") or {}
    line = (
        f"index rebuilt: {status['entries']} entries from {rebuild.get('files', '?')} files, "
        f"{status['vectors']} with vectors"
    )
    if report.get("broken"):
        line += f"; {report['broken']} files cannot be read (`somnid doctor` lists them)"
    if status["embedState"] == "off":
        line += "; embeddings are off (embed.provider = off): keyword recall only"
    elif status["embedState"] == "failed":
        line += f"; no vectors, the embedder failed: {status['embedError']}"
    return line


# --------------------------------------------------------------------------- offline


def _offline(settings: Settings, args: argparse.Namespace) -> int:
    from somnid.errors import DataDirLocked
    from somnid.store.lock import DataDirLock

    if not settings.data_dir.is_dir():
        raise CliError(f"no data dir at {settings.data_dir}: nothing to index")
    lock = DataDirLock(settings.data_dir)
    try:
        lock.acquire()
    except DataDirLocked:
        pid = lock.holder_pid()
        raise CliError(
            f"somnid{f' (pid {pid})' if pid else ''} holds {settings.data_dir} but does not answer "
            f"at {base_url(settings)}: it may still be starting, or listen on another port",
            EXIT_LOCKED,
        ) from None
    try:
        status = asyncio.run(_rebuild_offline(settings, vectors=args.vectors))
    finally:
        lock.release()
    print(_summary(status))
    return 0


async def _rebuild_offline(settings: Settings, *, vectors: bool) -> Status:
    from somnid.api.schemas.recall import IndexStatusOut
    from somnid.memory.clock import SystemClock, resolve_timezone
    from somnid.recall.offline import index_file_problem, open_for_rebuild

    if (problem := index_file_problem(settings)) is not None:
        raise CliError(problem)
    settings = settings.model_copy(
        update={"recall": settings.recall.model_copy(update={"watch": False})}
    )
    system = open_for_rebuild(settings, SystemClock(resolve_timezone(settings.timezone)), print)

    def fetch() -> Status:
        out = IndexStatusOut.model_validate(system.status(), from_attributes=True)
        return out.model_dump(by_alias=True)

    progress = Progress()
    task = asyncio.create_task(system.rebuild(vectors=vectors))
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=POLL_S)
            _draw_files(fetch(), progress)  # the task has begun: its progress is set
            if done:
                break
        task.result()
        await system.start(sync=False)
        while not _draw_vectors(status := fetch(), progress):  # noqa: ASYNC110 (drawing as it goes)
            await asyncio.sleep(POLL_S)
        progress.done()
        return status
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        await system.stop()
