"""``somnid doctor``'s history check: is git there, is the repository whole."""

from __future__ import annotations

from somnid.cli.doctor_checks import Context, Finding
from somnid.history.git import Git, find_git


def history_check(ctx: Context) -> list[Finding]:
    settings = ctx.settings
    if not settings.history.enabled:
        return [Finding("OK", "history", "off (history.enabled = false)")]
    if find_git() is None:
        return [
            Finding(
                "WARN",
                "history",
                "the git binary is missing: memory history, revert and purge are off",
                fix="apt install git (or set history.enabled = false), then restart somnid",
            )
        ]
    git = Git(settings.data_dir)
    if not (git.git_dir / "HEAD").is_file():
        return [Finding("OK", "history", "no repository yet: somnid creates it when it starts")]
    problem = git.fsck()
    if problem:
        return [
            Finding(
                "FAIL",
                "history",
                "git fsck finds the memory history damaged",
                fix=f"inspect with git -C {settings.data_dir} fsck",
                details=problem.splitlines()[:10],
            )
        ]
    count = git.text("rev-list", "--count", "HEAD").strip() if git.has_head() else "0"
    return [Finding("OK", "history", f"{count} commits in {git.git_dir}, fsck clean")]
