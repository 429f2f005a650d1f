"""Committing exactly somnid's paths, whatever a person has staged in the same repository.

A plain ``git commit`` takes the whole index: a file a person had ``git add``-ed in the data
dir went into somnid's next commit, under somnid's message and actor, and their own commit
then found nothing to commit. When the index holds changes before somnid stages its paths,
the commit is made with ``--only`` over those paths (git builds it from HEAD plus them, and
leaves the person's staged changes staged); otherwise the fast path commits the index.
"""

from __future__ import annotations

from somnid.history.git import Git


def commit_paths_only(git: Git, specs: list[str], message: str, env: dict[str, str]) -> bool:
    """Stage ``specs`` (pathspecs; ``env`` may turn on their magic) and commit them alone
    with ``message`` (``env`` also carries the author); False when they changed nothing."""
    listed = "\0".join(specs).encode("utf-8")
    others = git.call("diff", "--cached", "--quiet", env=env).returncode != 0
    # From stdin, not the command line: a first commit of 100k files would not fit.
    git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", input=listed, env=env)
    if not others:
        if git.call("diff", "--cached", "--quiet", env=env).returncode == 0:
            return False
        git.run("commit", "-q", "--no-verify", "-F", "-", input=message.encode(), env=env)
        return True
    # The paths on stdin, so the message goes as an argument (a listing of five labels and
    # the trailers: far below the 128 KB an argument may hold).
    only = ["--only", "--pathspec-from-file=-", "--pathspec-file-nul"]
    if git.call("commit", "--dry-run", *only, input=listed, env=env).returncode != 0:
        return False  # nothing of ours changed
    git.run("commit", "-q", "--no-verify", "-m", message, *only, input=listed, env=env)
    return True
