"""Talking to the sync remote: fetch and push (never forced), with secrets kept out of words.

Blocking: called from a worker thread. git keeps the credentials (an ssh agent, the user's
credential helper); somnid passes the URL on the command line, never into ``.git/config``,
and every message that could quote it goes through :func:`redact` first (the rule is
:func:`somnid.memory.scrub.mask_url_credentials`).
"""

from __future__ import annotations

import hashlib
import os
import socket
from pathlib import Path

from somnid.errors import Unavailable
from somnid.history.git import BRANCH, Git
from somnid.memory.scrub import mask_url_credentials

TRACKING = "refs/somnid-sync/remote"
"""Where the remote's branch is fetched to (a ref of somnid's own, never a branch)."""
_PASSED = ("GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_PROXY_COMMAND")


_MOVED_ON = (
    "[rejected]", "non-fast-forward", "fetch first", "stale info",
    "failed to update ref", "cannot lock ref",
)  # fmt: skip
"""How git says the remote's branch is not where this push expected it (the last two:
another machine's push landed between the remote's answer and this one's update)."""


class SyncError(Unavailable):
    """The remote could not be reached or refused: writes go on, the next sync retries."""

    code = "sync_failed"


redact = mask_url_credentials
"""Every message about the remote goes through this before anyone sees it."""


def machine_id(root: Path) -> str:
    """A short id of this machine's data dir (its host and path): the same at every start,
    different for two data dirs, so two machines never write a file of the same name."""
    seed = f"{socket.gethostname()}\0{root.resolve()}"
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:6]


def _network_env() -> dict[str, str]:
    """The user's own git settings for the network only (credential helpers, ssh)."""
    env = {name: os.environ[name] for name in _PASSED if name in os.environ}
    home = Path.home() / ".gitconfig"
    if home.is_file():
        env["GIT_CONFIG_GLOBAL"] = str(home)
    return env


class Remote:
    def __init__(self, git: Git, url: str, timeout_s: float) -> None:
        self.git = git
        self.url = url
        self.shown = redact(url)
        self.timeout_s = timeout_s

    def _call(self, *args: str) -> tuple[int, str]:
        done = self.git.call(*args, env=_network_env(), timeout=self.timeout_s)
        said = (done.stdout + b"\n" + done.stderr).decode("utf-8", "replace").strip()
        return done.returncode, redact(said.replace(self.url, self.shown))

    def fetch(self) -> str | None:
        """The remote's branch fetched to :data:`TRACKING`; its commit, or None while the
        remote has no branch yet (a new, empty repository)."""
        code, said = self._call(
            "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", self.url,
            f"+refs/heads/{BRANCH}:{TRACKING}",
        )  # fmt: skip
        if code != 0:
            if "couldn't find remote ref" in said:
                self.git.call("update-ref", "-d", TRACKING)
                return None
            raise SyncError(f"could not fetch from {self.shown}: {_last_lines(said)}")
        return self.tracking()

    def tracking(self) -> str | None:
        done = self.git.call("rev-parse", "--verify", "-q", f"{TRACKING}^{{commit}}")
        return done.stdout.decode().strip() or None if done.returncode == 0 else None

    def push(self, commit: str, *, replacing: str | None = None) -> bool:
        """Push ``commit`` as the remote's branch, fast-forward only: False when the remote
        moved on meanwhile (fetch and merge again), SyncError when it refuses otherwise.
        ``replacing`` (after a purge rewrote history, and only then): the remote's branch
        is replaced if it is still at that commit (a lease: never what was not fetched)."""
        lease = [f"--force-with-lease=refs/heads/{BRANCH}:{replacing}"] if replacing else []
        code, said = self._call(
            "push", "--porcelain", *lease, self.url, f"{commit}:refs/heads/{BRANCH}"
        )
        if code == 0:
            self.git.run("update-ref", TRACKING, commit)
            return True
        if any(why in said for why in _MOVED_ON):
            return False
        raise SyncError(f"{self.shown} refused the push: {_last_lines(said)}")


def _last_lines(said: str, count: int = 3) -> str:
    lines = [line for line in said.splitlines() if line.strip() and line.strip() != "Done"]
    return " / ".join(lines[-count:])[-500:] or "no reason given"
