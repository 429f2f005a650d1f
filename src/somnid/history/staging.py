"""Committing exactly somnid's paths, whatever a person has staged in the same repository.

A plain ``git commit`` takes the whole index: a file a person had ``git add``-ed in the data
dir went into somnid's next commit, under somnid's message and actor, and their own commit
then found nothing to commit. When the index holds changes before somnid stages its paths,
the commit is made with ``--only`` over those paths (git builds it from HEAD plus them, and
leaves the person's staged changes staged); otherwise the fast path commits the index.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from somnid.history.git import Git


def commit_paths_only(git: Git, specs: list[str], message: bytes, env: dict[str, str]) -> bool:
    """Stage ``specs`` (pathspecs; ``env`` may turn on their magic) and commit them alone
    with ``message`` (``env`` also carries the author); False when they changed nothing."""
    listed = "\0".join(specs).encode("utf-8")
    others = git.call("diff", "--cached", "--quiet", env=env).returncode != 0
    # From stdin, not the command line: a first commit of 100k files would not fit.
    git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input=listed, env=env)
    if not others:
        if git.call("diff", "--cached", "--quiet", env=env).returncode == 0:
            return False
        git.run("commit", "-q", "--no-verify", "-F", "-", input=message, env=env)
        return True
    fd, spec_file = tempfile.mkstemp(prefix="somnid-specs-", dir=git.git_dir)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(listed)
        only = ["--only", f"--pathspec-from-file={spec_file}", "--pathspec-file-nul"]
        if git.call("commit", "--dry-run", *only, env=env).returncode != 0:
            return False  # nothing of ours changed
        git.run("commit", "-q", "--no-verify", "-F", "-", *only, input=message, env=env)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(spec_file)
    return True
