"""Bodies of the history routes: commits, diffs, reverts, purges (camelCase on the wire)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from somnid.api.schemas.common import Schema
from somnid.history.identity import IdentityChange
from somnid.history.log import Change, Commit, EntryDiff
from somnid.history.purge import Progress, Purged
from somnid.history.revert import Reverted


class ChangeOut(Schema):
    path: str
    status: Literal["added", "modified", "deleted"]
    kind: str | None = Field(None, description="The entry's kind; null for other files.")
    name: str | None = None
    archived: bool = False

    @classmethod
    def of(cls, change: Change) -> ChangeOut:
        return cls(
            path=change.path,
            status=change.status,
            kind=change.kind,
            name=change.name,
            archived=change.archived,
        )


class CommitOut(Schema):
    id: str
    parent: str | None
    author: str = Field(description="The route, tool or actor that made the change.")
    source: str = Field(description="api, ui, tool, dream, hand or somnid.")
    date: str
    subject: str
    message: str
    dream_id: str | None = None
    agent: str | None = None
    session: str | None = None
    reverts: str | None = Field(None, description="The commit this one reverts.")
    reverted_by: str | None = Field(
        None,
        description="The commit that undid this one whole, while that stands (null once the "
        "revert is itself reverted).",
    )
    changes: list[ChangeOut]

    @classmethod
    def of(cls, commit: Commit) -> CommitOut:
        return cls(
            id=commit.id,
            parent=commit.parent,
            author=commit.author,
            source=commit.source,
            date=commit.date,
            subject=commit.subject,
            message=commit.message,
            dream_id=commit.dream_id,
            agent=commit.trailers.get("Somnid-Agent"),
            session=commit.trailers.get("Somnid-Session"),
            reverts=commit.trailers.get("Reverts"),
            reverted_by=commit.reverted_by,
            changes=[ChangeOut.of(change) for change in commit.changes],
        )


class HistoryPage(Schema):
    items: list[CommitOut]
    total: int
    offset: int
    limit: int


class EntryDiffOut(Schema):
    change: ChangeOut
    diff: str = Field(description="The unified diff of this file in the commit.")

    @classmethod
    def of(cls, item: EntryDiff) -> EntryDiffOut:
        return cls(change=ChangeOut.of(item.change), diff=item.diff)


class CommitDetail(Schema):
    commit: CommitOut
    entries: list[EntryDiffOut]

    @classmethod
    def of(cls, commit: Commit, entries: list[EntryDiff]) -> CommitDetail:
        return cls(commit=CommitOut.of(commit), entries=[EntryDiffOut.of(e) for e in entries])


class EntryHistoryPage(Schema):
    kind: str
    name: str
    items: list[CommitDetail] = Field(
        description="The commits that touched this entry, newest first, each with this "
        "entry's diffs only (live and archived copies)."
    )
    total: int
    offset: int
    limit: int


class IdentityDiffOut(EntryDiffOut):
    reverted_by: str | None = Field(
        None, description="The commit that put this profile back as it was before, if any."
    )


class IdentityChangeOut(Schema):
    commit: CommitOut
    entries: list[IdentityDiffOut] = Field(
        description="The profiles this commit changed, each with its diff (revert one with "
        "POST /v1/history/entries/profile/{name}/{commit}/revert)."
    )

    @classmethod
    def of(cls, item: IdentityChange) -> IdentityChangeOut:
        return cls(
            commit=CommitOut.of(item.commit),
            entries=[
                IdentityDiffOut(
                    change=ChangeOut.of(diff.change),
                    diff=diff.diff,
                    reverted_by=item.reverted_by.get(diff.change.path),
                )
                for diff in item.diffs
            ],
        )


class IdentityPage(Schema):
    items: list[IdentityChangeOut]
    total: int
    offset: int
    limit: int


class RevertOut(Schema):
    reverted: str = Field(description="The commit undone.")
    commit: str | None = Field(description="The new commit that undid it.")
    paths: list[str]
    reopened_logs: list[str] = Field(
        default_factory=list,
        description="A reverted dream's session logs, pending again: the next dream reads "
        "them anew.",
    )

    @classmethod
    def of(cls, done: Reverted) -> RevertOut:
        return cls(
            reverted=done.reverted,
            commit=done.commit,
            paths=done.paths,
            reopened_logs=list(done.reopened_logs),
        )


class PurgeIn(Schema):
    scrub_logs: bool = Field(
        False,
        strict=True,
        description="Also replace the entry's text (its description and each line of its "
        "body) and `phrases` by [REDACTED] in every session log, live and archived, so "
        "search_recent_conversation and recall's conversation lines no longer serve it.",
    )
    phrases: list[Annotated[str, StringConstraints(min_length=4, max_length=2000)]] = Field(
        default_factory=list,
        max_length=50,
        description="More text to scrub from the logs (needs scrubLogs): what the user said, "
        "which the entry put in other words. Never written to the audit log.",
    )


class ScrubbedLogOut(Schema):
    path: str
    replaced: int = Field(description="Occurrences replaced in this log.")


class PurgeOut(Schema):
    kind: str
    name: str
    removed: list[str] = Field(description="The paths deleted from the data dir.")
    history: bool = Field(description="Whether past versions were removed from history too.")
    rewritten_commits: int = Field(description="Commits rebuilt without the entry.")
    dropped_commits: int = Field(
        0, description="Commits that changed nothing but the entry: gone from history."
    )
    commit: str | None = Field(None, description="The purge's commit (none when rewritten).")
    estimated_seconds: float | None = Field(
        None,
        description="How long the history rewrite was estimated to take before it started "
        "(commits to rewrite × one commit's rebuild, timed); null without a rewrite.",
    )
    seconds: float = Field(description="How long the purge took.")
    scrubbed_logs: list[ScrubbedLogOut] = Field(
        default_factory=list,
        description="With scrubLogs: the session logs (live and archived) the text was "
        "replaced in by [REDACTED], and how many times in each.",
    )

    @classmethod
    def of(cls, done: Purged) -> PurgeOut:
        return cls(
            kind=done.kind,
            name=done.name,
            removed=done.removed,
            history=done.history,
            rewritten_commits=done.rewritten,
            dropped_commits=done.dropped,
            commit=done.commit,
            estimated_seconds=_round(done.estimated_s),
            seconds=done.seconds,
            scrubbed_logs=[
                ScrubbedLogOut(path=str(item.path), replaced=item.replaced)
                for item in done.scrubbed
            ],
        )


class PurgeStatusOut(Schema):
    running: bool = Field(description="Whether a purge runs now (one at a time).")
    kind: str | None = None
    name: str | None = None
    history: bool = Field(False, description="Whether it rewrites history.")
    started_at: str | None = None
    phase: Literal["starting", "rewriting", "pruning", "finishing"] | None = Field(
        None,
        description="starting (the entry's files, the purge's commit), rewriting (commit by "
        "commit), pruning (the branch moved, old objects pruned: history reads wait for "
        "this step only), finishing (the index).",
    )
    commits: int = Field(0, description="Commits the rewrite goes through.")
    done: int = Field(0, description="Of those, how many are done.")
    estimated_seconds: float | None = Field(
        None, description="The whole rewrite's estimate, made before it started."
    )
    remaining_seconds: float | None = Field(
        None, description="What is left, at the pace of the commits done so far."
    )
    elapsed_seconds: float = 0.0

    @classmethod
    def of(cls, progress: Progress | None) -> PurgeStatusOut:
        if progress is None:
            return cls(running=False)
        return cls(
            running=True,
            kind=progress.kind,
            name=progress.name,
            history=progress.history,
            started_at=progress.started_at,
            phase=progress.phase,
            commits=progress.commits,
            done=progress.done,
            estimated_seconds=_round(progress.estimated_s),
            remaining_seconds=_round(progress.remaining_s()),
            elapsed_seconds=round(progress.elapsed_s(), 3),
        )


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)
