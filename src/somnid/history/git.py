"""The ``git`` binary, run on the data dir's history repository. Blocking: call from a thread.

The repository is ``<data>/.git`` with the data dir as work tree; its ``.gitignore`` keeps
everything but ``memory/`` and ``skills/`` out (and, inside them, the raw session logs and
the temp files of an atomic write). The user's own git configuration is not read: no hook,
signing or pager of theirs runs on somnid's commits.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import shutil
import subprocess
import time
from pathlib import Path

from somnid.errors import StorageError, Unavailable
from somnid.store.atomic import TEMP_PREFIX, write_atomic

log = logging.getLogger(__name__)

BRANCH = "main"
GITIGNORE = f"""\
# somnid keeps the history of memory/ and skills/ only (docs/history.md).
/*
!/.gitignore
!/memory/
!/skills/
# Raw conversation: appended every turn, consolidated by dreams, not memory itself.
/memory/session-log/
# Half-written files: the temp file of an atomic write, editors' swap and backup files.
{TEMP_PREFIX}*
.*.tmp
*.tmp
.*.sw[a-p]
*~
\\#*#
.#*
4913
# An entry may be named as one of them: its folder is history's.
!*.tmp/
!4913/
"""
STALE_LOCK_S = 30.0
"""An index.lock this old with no git running in the data dir is a killed git's."""
_UNDER_WAY = (
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase (or am)"),
)
"""What git leaves in .git while a person's operation waits for them (a conflict)."""
_IDENTITY = {
    "GIT_COMMITTER_NAME": "somnid",
    "GIT_COMMITTER_EMAIL": "somnid@localhost",
}


def find_git() -> str | None:
    return shutil.which("git")


def spare_descriptors() -> int | None:
    """File descriptors still free under the soft limit (None where it cannot be told). A
    git child needs a few; the committer waits rather than starve the server's accepts."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        used = len(os.listdir("/proc/self/fd"))
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft - used


class GitError(StorageError):
    code = "history_error"


class Git:
    """One repository; ``run`` raises :class:`GitError` with git's own words on failure."""

    def __init__(self, root: Path, binary: str | None = None) -> None:
        binary = binary or find_git()
        if binary is None:
            raise Unavailable(
                "history is off: the git binary is not installed (apt install git)",
                code="history_off",
            )
        self.binary = binary
        self.root = root
        self.git_dir = root / ".git"
        self._env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(root),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_LITERAL_PATHSPECS": "1",  # a path is a path, never a glob
            # A background status takes no lock to refresh the index on the side (git's
            # advice for background processes): a person's git add, stash or checkout at
            # that moment failed on "index.lock: File exists".
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
            **_IDENTITY,
        }

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        ok: tuple[int, ...] = (0,),
    ) -> bytes:
        done = self.call(*args, input=input, env=env)
        if done.returncode not in ok:
            said = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise GitError(f"git {args[0]} failed ({done.returncode}): {said}")
        return done.stdout

    def call(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run git; ``timeout`` (seconds) kills a git that hangs (a remote that never
        answers) and raises :class:`GitError`."""
        command = [self.binary, "-c", "core.quotePath=false", "-c", "core.hooksPath=/dev/null"]
        try:
            return subprocess.run(
                [*command, *args],
                input=input,
                stdin=None if input is not None else subprocess.DEVNULL,
                capture_output=True,
                cwd=self.root,
                env={**self._env, **(env or {})},
                check=False,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise GitError(f"git {args[0]} did not end within {timeout:g} s") from None

    def register_merge_driver(self, name: str, command: str, attributes: str) -> None:
        """Name somnid's merge driver in the repository's config and say which files it
        merges in ``.git/info/attributes`` (drivers live in a clone's config, never in the
        repository; attributes there apply from the first merge, shared history or not)."""
        if self.call("config", f"merge.{name}.driver").stdout.decode().strip() != command:
            self.run("config", f"merge.{name}.name", f"somnid's {name} merge")
            self.run("config", f"merge.{name}.driver", command)
        info = self.git_dir / "info" / "attributes"
        if not info.is_file() or info.read_text("utf-8") != attributes:
            info.parent.mkdir(exist_ok=True)
            write_atomic(info, attributes.encode("utf-8"))

    def pack_if_due(self) -> None:
        """Pack loose objects when git's own measure says so (``gc --auto``: over 6,700 of
        them). somnid's repositories set ``gc.auto`` 0, so that git never packs on its own
        in the middle of a commit; nothing else packed, and every commit's objects stayed
        loose for ever (a probe: 212 MB in 38,821 files after fifteen minutes of edits,
        3.9 MB packed). Its failure leaves things as they were: said, and tried again."""
        done = self.call(
            "-c", "gc.auto=6700", "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet"
        )
        said = done.stderr.decode("utf-8", "replace").strip()[-300:]
        if done.returncode != 0 or said:  # ("too many unreachable loose objects", exit 0)
            log.warning("history: packing the repository: %s", said or done.returncode)

    def text(self, *args: str, env: dict[str, str] | None = None) -> str:
        return self.run(*args, env=env).decode("utf-8", "replace")

    def has_head(self) -> bool:
        return self.call("rev-parse", "--verify", "-q", "HEAD").returncode == 0

    def check_attached(self) -> None:
        """Refuse to go on while HEAD is detached (``git checkout <commit>`` in the data dir):
        what somnid committed there would vanish from the tree at the next checkout of main;
        or while a person's merge, cherry-pick, revert or rebase stopped half way: somnid's
        ``git add`` would mark their conflicts resolved, and their ``--abort`` would then
        take every write staged meanwhile with it. A stale ``index.lock`` (a killed git's:
        old, and no git runs here) is cleared first, as at start."""
        self._clear_stale_index_lock()
        head = self.call("symbolic-ref", "-q", "HEAD")
        if head.returncode != 0:
            raise GitError(
                "HEAD is detached (a git checkout of a commit in the data dir): somnid commits "
                f"only onto its branch; run `git checkout {BRANCH}` there"
            )
        if head.stdout.decode().strip() != f"refs/heads/{BRANCH}":  # a person's branch
            raise GitError(
                f"another branch than {BRANCH} is checked out in the data dir: somnid commits "
                f"only onto its branch; run `git checkout {BRANCH}` there"
            )
        under_way = self.under_way()
        if under_way is not None:
            raise GitError(
                f"{under_way}: somnid commits once it is finished or aborted (its --continue "
                "or --abort there)"
            )
        if self._unmerged():
            raise GitError(
                "the data dir's git index holds unmerged paths (a conflict left by a person's "
                "git stash pop or merge): somnid commits once they are resolved"
            )

    def under_way(self) -> str | None:
        """What a person's git operation waiting in the data dir is (a merge, rebase,
        cherry-pick or revert stopped at a conflict), said for a message; None: none."""
        for mark, what in _UNDER_WAY:
            if (self.git_dir / mark).exists():
                return f"a git {what} is under way in the data dir ({mark} in .git)"
        return None

    def _unmerged(self) -> bool:
        """Whether the index holds a path at a conflict's stages (1-3)."""
        return bool(self.run("ls-files", "-u", "-z").strip())

    def open(self) -> None:
        """Create the repository if needed, and clear what a killed git left: a stale
        ``index.lock`` or ref lock (the data-dir lock says no other somnid runs here)."""
        if not (self.git_dir / "HEAD").is_file():
            self.run("init", "-q", f"--initial-branch={BRANCH}")
            self.run("config", "core.fsync", "committed")
            self.run("config", "gc.auto", "0")  # somnid decides when to gc (after a purge)
        self._remove_stale_locks()
        self._on_main()
        ignore = self.root / ".gitignore"
        before = ignore.read_bytes() if ignore.is_file() else None
        if before != GITIGNORE.encode("utf-8"):
            if before is not None and not before.startswith(GITIGNORE.encode("utf-8")[:40]):
                # Not somnid's (an older somnid's is replaced): a person wrote it; kept.
                kept = self.root / ".gitignore.before-somnid"
                write_atomic(kept, before)
                log.warning("history: the data dir's own .gitignore is kept as %s", kept.name)
            write_atomic(ignore, GITIGNORE.encode("utf-8"))

    def _on_main(self) -> None:
        """A repository a person made before somnid (``git init``: ``master``) is put on
        ``main``, at the same commit, their branch kept: somnid commits only onto main."""
        head = self.call("symbolic-ref", "-q", "HEAD").stdout.decode().strip()
        main = f"refs/heads/{BRANCH}"
        if (
            not head
            or head == main
            or self.call("rev-parse", "--verify", "-q", main).returncode == 0
        ):
            return
        if self.call("rev-parse", "--verify", "-q", head).returncode == 0:
            self.run("branch", BRANCH, head)  # their branch stays where it is
        self.run("symbolic-ref", "HEAD", f"refs/heads/{BRANCH}")
        log.warning("history: the data dir's git was on %s; somnid commits onto %s", head, BRANCH)

    def _clear_stale_index_lock(self) -> None:
        """Remove an ``index.lock`` older than :data:`STALE_LOCK_S` while no git runs in
        the data dir: one a start left to a person's git, which ended without taking it."""
        lock = self.git_dir / "index.lock"
        try:
            age = time.time() - lock.stat().st_mtime
        except OSError:
            return
        if age > STALE_LOCK_S and not _git_running_in(self.root):
            log.warning("history: removing an index.lock no running git holds")
            with contextlib.suppress(OSError):
                lock.unlink()

    def _remove_stale_locks(self) -> None:
        candidates = [
            self.git_dir / name for name in ("index.lock", "HEAD.lock", "packed-refs.lock")
        ]
        refs = self.git_dir / "refs"
        if refs.is_dir():
            candidates += list(refs.rglob("*.lock"))
        present = [lock for lock in candidates if lock.exists()]
        if present and _git_running_in(self.root):
            # A person's git (a commit waiting for its editor): the lock is theirs, and
            # taking it fails their commit; somnid's commits wait for it as for any lock.
            log.warning("history: a git runs in the data dir; its %s is left", present[0].name)
            return
        for lock in present:
            log.warning("history: removing %s left by an interrupted commit", lock.name)
            with contextlib.suppress(OSError):
                lock.unlink()

    def fsck(self) -> str:
        done = self.call("fsck", "--no-progress", "--no-dangling")
        return "" if done.returncode == 0 else done.stderr.decode("utf-8", "replace").strip()


def _git_running_in(root: Path) -> bool:
    """Whether a git process (not somnid's: none runs before the start's commit) works in
    ``root`` or below it, read from ``/proc`` (False where there is none)."""
    here = root.resolve()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "comm").read_text().strip() != "git":
                continue
            cwd = Path(os.readlink(proc / "cwd"))
        except OSError:  # gone meanwhile, or another user's
            continue
        if cwd == here or here in cwd.parents:
            return True
    return False
