"""A purge travels with sync: the record of it, and what each machine does on receiving it.

A purge is local (history's :mod:`~somnid.history.purge`, recorded in ``audit.log``). For
other machines to forget the entry too, a round first writes each purge this machine made
into ``memory/purged.jsonl`` (one JSON line: kind, name, paths, history, when, machine),
a tracked file that syncs like any other. Then:

- in a merge, a purge one side has and the merge base has not wins over the other side's
  versions of its paths (the side that purged decides what is there: nothing, or an entry
  made again after the purge); an edit never brings a purged entry back;
- a machine that receives a purge with ``history`` rewrites its own history without the
  entry (as the purge did on the first machine) and deletes its files, before it merges;
- the purging machine's next merge brings the remote's old versions back as ancestors: it
  rewrites again after the merge and replaces the remote's branch, with a lease on what it
  fetched (``--force-with-lease``): the only forced push somnid makes, after an explicit
  purge with ``history``.

Blocking; the caller holds the committer's lock.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from somnid.errors import SomnidError
from somnid.history import purge as purging
from somnid.history.audit import AUDIT_FILE
from somnid.history.committer import Committer
from somnid.history.git import Git
from somnid.memory.kinds import Kind
from somnid.memory.names import check_name
from somnid.provenance import Actor
from somnid.store import frontmatter
from somnid.store.layout import Layout

RECORD = "memory/purged.jsonl"
KEPT = "purged-kept"
"""Where a received purge copies what a person wrote in the entry and history never had."""
SYNC = Actor("sync", "somnid sync")
Pruning = Callable[[], AbstractContextManager[None]]
_PATHS = Layout(Path("/"))  # where entries live, relative to any data dir

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Purge:
    kind: str
    name: str
    specs: tuple[str, ...]
    history: bool
    at: str
    machine: str

    @property
    def key(self) -> tuple[str, str, str]:
        return self.kind, self.name, self.at


def at(git: Git, commit: str | None) -> list[Purge]:
    """The purges recorded in ``commit``'s ``memory/purged.jsonl`` ([] without one)."""
    if commit is None:
        return []
    done = git.call("cat-file", "blob", f"{commit}:{RECORD}")
    return _parse(done.stdout.decode("utf-8", "replace")) if done.returncode == 0 else []


def _parse(text: str) -> list[Purge]:
    found = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
            kind, name = Kind(str(item["kind"])), check_name(str(item["name"]))
            # Only the named entry's own paths: a line edited by hand (``memory/knowledge``,
            # ``memory/../index``) never makes a sync drop other entries or other files.
            own = purging.entry_specs(_PATHS, kind, name)
            specs = tuple(spec for spec in map(str, item["specs"]) if spec in own)
            found.append(
                Purge(
                    kind.value,
                    name,
                    specs,
                    bool(item.get("history")),
                    str(item.get("at") or ""),
                    str(item.get("machine") or ""),
                )
            )
        except (ValueError, KeyError, TypeError, SomnidError):
            continue  # a line broken by hand: not a purge
    return found


def record_local(committer: Committer, machine: str, since: dt.datetime) -> None:
    """Write each purge of ``audit.log`` made ``since`` (sync was first set up) and not yet
    in ``memory/purged.jsonl`` there, and commit it (through the store: it is a file under
    memory/). A purge from before sync stays this machine's own."""
    layout = committer.layout
    target = layout.root / RECORD
    try:
        current = target.read_text("utf-8")
    except FileNotFoundError:
        current = ""
    known = {purge.key for purge in _parse(current)}
    lines = []
    for item in _audited(layout.root / AUDIT_FILE):
        try:
            kind = Kind(str(item["kind"]))
            key = (kind.value, str(item["name"]), str(item["at"]))
            when = dt.datetime.fromisoformat(key[2])
        except (KeyError, ValueError):
            continue
        if key in known or when.tzinfo is None or when < since:
            continue
        specs = purging.entry_specs(layout, kind, key[1])
        record = {
            "kind": key[0], "name": key[1], "specs": specs, "history": bool(item.get("history")),
            "at": key[2], "machine": machine,
        }  # fmt: skip
        lines.append(json.dumps(record, ensure_ascii=False, sort_keys=True))
        known.add(key)
    if lines:
        text = current + ("" if not current or current.endswith("\n") else "\n")
        committer.memories.put_raw(target, (text + "\n".join(lines) + "\n").encode("utf-8"))
    if committer.changed_paths([RECORD]):
        committer.commit_paths([RECORD], "Sync: purges to carry to the other machines", SYNC)


def _audited(path: Path) -> list[dict[str, object]]:
    try:
        text = path.read_text("utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return []
    found = []
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and item.get("action") == "purge":
            found.append(item)
    return found


def sync_since(git: Git, now: dt.datetime) -> dt.datetime:
    """When sync was first set up on this repository (``somnid.syncSince`` in its config,
    set to ``now`` the first time)."""
    said = git.call("config", "somnid.syncSince").stdout.decode().strip()
    try:
        return dt.datetime.fromisoformat(said)
    except ValueError:
        git.run("config", "somnid.syncSince", now.astimezone(dt.UTC).isoformat())
        return now


def fresh(git: Git, side: str | None, base: str | None) -> list[Purge]:
    """The purges ``side`` has that ``base`` has not."""
    old = {purge.key for purge in at(git, base)}
    return [purge for purge in at(git, side) if purge.key not in old]


def in_history(
    git: Git, purges: list[Purge], commit: str = "HEAD", also: list[str] | None = None
) -> list[str]:
    """The paths of ``purges`` with ``history`` (and ``also``: their copies) that
    ``commit``'s history still holds."""
    specs = sorted({spec for purge in purges if purge.history for spec in purge.specs})
    specs = sorted({*specs, *(also or [])}) if specs else []
    if not specs:
        return []
    done = git.call("rev-list", "-1", "--full-history", commit, "--", *specs)
    return specs if done.returncode == 0 and done.stdout.strip() else []


def copies_in(git: Git, commit: str, purge: Purge) -> list[str]:
    """The folders of ``commit``'s tree holding a copy of the purged entry archived under
    another name (``x--2``, ``archived_from: x``): the other machine archived it while the
    purge was on its way, and a history rewrite hides that move from a merge."""
    kind = Kind(purge.kind)
    if not kind.archivable:
        return []
    archive = str(_PATHS.relative(_PATHS.archive_dir(kind)))
    listed = git.call("ls-tree", "-z", "--name-only", commit, "--", f"{archive}/")
    found = []
    for path in filter(None, listed.stdout.decode("utf-8", "replace").split("\0")):
        folder = path.rsplit("/", 1)[-1]
        if not folder.startswith(f"{purge.name}--"):
            continue
        blob = git.call("cat-file", "blob", f"{commit}:{path}/{_PATHS.file_name(kind)}")
        try:
            meta = (
                frontmatter.parse(blob.stdout.decode("utf-8")).meta if blob.returncode == 0 else {}
            )
        except (UnicodeDecodeError, SomnidError):
            continue  # no copy that can be told as one
        if str(meta.get("archived_from") or "") == purge.name:
            found.append(path)
    return found


def local_copies(committer: Committer, received: list[Purge]) -> list[str]:
    """The folders of this machine's archived copies of purged entries, archived under
    another name since (``x--2``, ``archived_from: x``: archived here while the purge was on
    its way): a purge takes every copy, and a history rewrite hides the move a merge would
    otherwise follow from ``x`` to ``x--2``."""
    layout = committer.layout
    found = []
    for purge in received:
        kind = Kind(purge.kind)
        for copy in committer.memories.copies_archived_from(kind, purge.name):
            found.append(str(layout.relative(layout.entry_folder(kind, copy, archived=True))))
    return found


def forget_locally(committer: Committer, specs: list[str], pruning: Pruning) -> list[str]:
    """Received: this machine's files of the purged entries deleted (through the store)
    and its history rewritten without them; the paths removed. A file its history never had
    (broken by hand, or changed since the last commit: a person typing in it) is copied first
    to ``purged-kept/<time>/`` in the data dir, which neither history nor sync reads: its
    words are in no other copy, and the purge still takes the entry everywhere."""
    unsaved = committer.changed_paths(specs)
    if unsaved:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H%M%S.%fZ")
        for rel, kept in committer.memories.set_aside(unsaved, f"{KEPT}/{stamp}"):
            log.warning("purged on another machine: %s held text history never had;"
                        " it is kept in %s (not synced)", rel, kept)  # fmt: skip
    removed = committer.memories.remove_paths(specs)
    if removed:
        committer.commit_paths(specs, "Sync: purged as another machine did", SYNC)
    purging.rewrite(committer.git, specs, pruning=pruning)
    return removed
