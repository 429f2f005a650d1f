"""Committing exactly somnid's paths, whatever a person has staged in the same repository.

A plain ``git commit`` takes the whole index: a file a person had ``git add``-ed in the data
dir went into somnid's next commit, under somnid's message and actor, and their own commit
then found nothing to commit. Checking the index first is not enough: a person may stage a
file between that check and the commit (seen in CI). So every commit is made with ``--only``
over somnid's paths: git builds it from HEAD plus those paths, and leaves anything else that
is staged as it was.
"""

from __future__ import annotations

import logging
import os
import time

from somnid.history.git import Git, GitError
from somnid.history.pathspecs import with_folders

# What git says (LC_ALL=C) when a commit would take nothing.
_NOTHING = ("nothing to commit", "no changes added to commit")
# What git says (LC_ALL=C) of one path it cannot take.
_PATH_REFUSED = (b"Permission denied", b"beyond a symbolic link", b"unable to index file")
ONE_BY_ONE_AT_MOST = 200  # specs added one by one when git refuses their add as a whole
# What git says (LC_ALL=C) when a file moved while it read the folder (an archive, a
# restore: "unable to stat …", "could not open directory …", each with this reason); the
# add is made again, over the files as they are now. A folder it may not read says
# "Permission denied" instead, which no retry mends.
_MOVED = "No such file or directory"
# What ``commit --only`` says of a spec git does not know: its only files left out (a broken
# file), or moved away since the add (an archive). The commit is made again with the specs
# git knows. Read as "nothing to commit", it dropped the writes of a whole batch, whose
# files the next sweep took for hand edits.
_UNKNOWN = "did not match any file"
RACED_TRIES = 3
RACED_PAUSE_S = 0.05

log = logging.getLogger("somnid.history.leftout")


def commit_paths_only(
    git: Git, specs: list[str], message: str, env: dict[str, str], *, tops: bool = False
) -> bool:
    """Stage ``specs`` (pathspecs; ``env`` may turn on their magic) and commit them alone
    with ``message`` (``env`` also carries the author); False when they changed nothing.
    ``tops``: the specs are the few top folders, some of which may hold nothing. A file
    that moved while git read it (archives racing a history read made half of them 503)
    is read again: the whole is tried a few times. Writes never wait for git."""
    for attempt in range(RACED_TRIES):
        try:
            return _commit_paths_only(git, specs, message, env, tops=tops)
        except GitError as exc:
            if attempt + 1 == RACED_TRIES or _MOVED not in exc.detail:
                raise
            log.info("history: a file moved while git read it; reading again: %s", exc.detail)
            time.sleep(RACED_PAUSE_S * (attempt + 1))  # the move that raced it is done by then
    raise AssertionError("unreachable")


def _commit_paths_only(
    git: Git, specs: list[str], message: str, env: dict[str, str], *, tops: bool
) -> bool:
    # From stdin, not the command line: a first commit of 100k files would not fit. The
    # message goes as an argument (a listing of five labels and the trailers: far below the
    # 128 KB an argument may hold).
    paths = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    git.check_attached()
    specs = _add(git, specs, env)
    if not [spec for spec in specs if not spec.startswith(":(exclude")]:
        return False
    listed = _listed(specs)
    if tops:
        specs = _known(git, specs, env)
        if not [spec for spec in specs if not spec.startswith(":(exclude")]:
            return False
        listed = _listed(specs)
    # No --dry-run first: it prints a full status, untracked files and all (2-11 s at 100k
    # entries, more than the commit). The commit itself says when there is nothing to take.
    # No argument holds a NUL: one in a dream's trigger or a model's failure made every
    # commit after it fail ("embedded null byte"), history stuck until a restart.
    message = message.replace("\x00", "\ufffd")
    while True:
        done = git.call(
            "commit", "-q", "--no-verify", "--untracked-files=no", "-m", message, "--only",
            *paths, input=listed, env=env,
        )  # fmt: skip
        if done.returncode == 0:
            return True
        said = (done.stdout + done.stderr).decode("utf-8", "replace")
        if any(words in said for words in _NOTHING):
            return False  # nothing of ours changed
        if _UNKNOWN not in said:
            raise GitError(f"git commit failed ({done.returncode}): {said.strip()[-500:]}")
        known = _known(git, specs, env)
        if known == specs or not [spec for spec in known if not spec.startswith(":(exclude")]:
            return False  # nothing git knows of ours
        specs, listed = known, _listed(known)


def _add(git: Git, specs: list[str], env: dict[str, str]) -> list[str]:
    """``git add -A`` of ``specs``; the specs to commit.

    A path whose deletion is staged already is neither in the work tree nor in the index,
    and git refuses the whole add for it ("did not match any files"); a commit killed
    between its add and its commit leaves one, and every later commit naming it failed.
    Such specs are left out of the add: ``commit --only`` still takes them from HEAD, so
    the deletion is committed. One HEAD does not have either is left out of the commit.

    A path git cannot take (a file somnid may not read, a folder swapped for a link: "beyond
    a symbolic link") failed the whole add, and with it every commit naming it, until a
    person fixed it: history answered 503 meanwhile. The specs are then added one by one,
    and those git refuses are left out of this commit (the store reports them broken)."""
    paths = ["--pathspec-from-file=-", "--pathspec-file-nul"]
    done = git.call("add", "-A", *paths, input=_listed(specs), env=env)
    if done.returncode == 0:
        return specs
    if b"did not match any files" in done.stderr:
        present = [s for s in specs if s.startswith(":(exclude") or _there(git, s, env)]
        if [spec for spec in present if not spec.startswith(":(exclude")]:
            git.run("add", "-A", *paths, input=_listed(present), env=env)
        # A spec in neither is committed only if HEAD has it (its deletion). One made and
        # moved away since it was noted (created, then archived) is no one's to commit, and
        # ``commit --only`` would refuse the whole commit for it.
        elsewhere = {s.removeprefix(":(literal)"): s for s in specs if s not in present}
        return present + [elsewhere[path] for path in in_head(git, list(elsewhere))]
    said = done.stderr.decode("utf-8", "replace").strip()[-500:]
    plain = [spec for spec in specs if not spec.startswith(":(exclude")]
    tops = any("/" not in spec.removeprefix(":(literal)") for spec in plain)
    if tops or len(plain) > ONE_BY_ONE_AT_MOST or not _a_path_refused(done.stderr):
        # A top folder (a large commit's "memory") is never left out whole for one path.
        raise GitError(f"git add failed ({done.returncode}): {said}")
    excluded = [spec for spec in specs if spec.startswith(":(exclude")]
    kept = []
    for spec in plain:
        alone = git.call("add", "-A", *paths, input=_listed([spec, *excluded]), env=env)
        if alone.returncode == 0 or b"did not match any files" in alone.stderr:
            kept.append(spec)
            continue
        if not _a_path_refused(alone.stderr):  # the repository's trouble (a lock, a full disk)
            why = alone.stderr.decode("utf-8", "replace").strip()[-500:]
            raise GitError(f"git add failed ({alone.returncode}): {why}")
        why_lines = alone.stderr.decode("utf-8", "replace").strip().splitlines()
        log.warning("history: leaving %s out of this commit: %s", spec, why_lines[-2:])
    return [*kept, *excluded]


def _a_path_refused(stderr: bytes) -> bool:
    """Whether git refused a path of its own (not readable, below a link), not the add."""
    if b".git/" in stderr:  # its own files (an index lock it may not make, say)
        return False
    return any(words in stderr for words in _PATH_REFUSED)


def in_head(git: Git, specs: list[str]) -> list[str]:
    """The ``specs`` HEAD has (a file, or a folder holding one). A path gone from both the
    work tree and the index is still somnid's to commit when its deletion is staged."""
    if not git.has_head():
        return []
    out = git.run("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *specs)
    known = with_folders(os.fsdecode(path) for path in out.split(b"\0") if path)
    return [spec for spec in specs if spec in known]


def _there(git: Git, spec: str, env: dict[str, str]) -> bool:
    """Whether ``spec`` names something in the work tree or in the index."""
    plain = spec.removeprefix(":(literal)")
    if os.path.lexists(git.root / plain):
        return True
    return bool(git.call("ls-files", "-z", "--", spec, env=env).stdout)


def _listed(specs: list[str]) -> bytes:
    return os.fsencode("\0".join(specs))  # a name that is no UTF-8 as the disk has it


def _known(git: Git, specs: list[str], env: dict[str, str]) -> list[str]:
    """The specs git knows a path of (staged or in HEAD), exclusions kept: ``git commit
    --only`` refuses one that matches nothing (an empty ``skills`` top, say)."""
    kept = []
    for spec in specs:
        if spec.startswith(":(exclude"):
            kept.append(spec)
            continue
        staged = git.call("ls-files", "-z", "--", spec, env=env).stdout
        committed = git.call("ls-tree", "-r", "--name-only", "HEAD", "--", spec, env=env)
        if staged or (committed.returncode == 0 and committed.stdout):
            kept.append(spec)
    return kept


def in_history(git: Git, top: str) -> bool:
    """Whether the index or HEAD holds files under ``top`` (a missing index: HEAD alone; a
    new repository: nothing). A git that cannot say raises GitError (never read as "no")."""
    if git.call("ls-files", "-z", "--", top).stdout:
        return True
    if git.call("rev-parse", "--verify", "-q", "HEAD").returncode != 0:
        return False  # no commit yet
    return bool(git.run("ls-tree", "-z", "HEAD", "--", top))
