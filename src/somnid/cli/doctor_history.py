"""``somnid doctor``'s history checks: is git there, is the repository whole, how sync goes."""

from __future__ import annotations

from somnid.cli._common import CliError
from somnid.cli.doctor_checks import Context, Finding
from somnid.history.git import Git, find_git
from somnid.sync.remote import redact


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


def sync_check(ctx: Context) -> list[Finding]:
    """Sync's state from the running daemon (last error, conflicts); without one, only
    whether it is set up (reaching the remote is the daemon's job)."""
    settings = ctx.settings
    if settings.sync.remote is None:
        return [Finding("OK", "sync", "off (sync.remote is not set)")]
    shown = redact(settings.sync.remote)
    if not settings.history.enabled or find_git() is None:
        return [
            Finding(
                "WARN",
                "sync",
                f"sync.remote is {shown}, but sync needs history, which is off",
                fix="set history.enabled = true and install git, then restart somnid",
            )
        ]
    if ctx.health is None or not ctx.token_ok:
        return [Finding("OK", "sync", f"with {shown} (no daemon running to ask how it goes)")]
    try:
        status = ctx.client.get("/v1/sync/status")
    except CliError as exc:
        return [Finding("WARN", "sync", f"the daemon did not say how sync goes: {exc.message}")]
    how = (
        f"{status.get('ahead')} ahead, {status.get('behind')} behind, "
        f"last pull {status.get('lastPull') or 'never'}, "
        f"last push {status.get('lastPush') or 'never'}"
    )
    found = []
    if status.get("lastError"):
        found.append(
            Finding(
                "WARN",
                "sync",
                f"the last sync with {shown} failed: {status['lastError']} ({how})",
                fix="writes go on locally; fix the remote (network, credentials), then "
                "`somnid sync`",
            )
        )
    conflicts = status.get("conflicts") or []
    if conflicts:
        found.append(
            Finding(
                "WARN",
                "sync",
                f"{len(conflicts)} conflict(s) kept beside their entry ({how})",
                fix="settle each in the memory browser's Sync tab: keep this machine's "
                "version or take the other's (DELETE /v1/sync/conflicts?path=...&keep=other)",
                details=[c["path"] for c in conflicts[:10]],
            )
        )
    return found or [Finding("OK", "sync", f"with {shown}: {how}, no conflict")]
