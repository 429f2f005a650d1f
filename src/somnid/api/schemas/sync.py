"""Bodies of the sync routes: the state of sync with the remote, its conflicts (camelCase)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from somnid.api.schemas.common import Schema
from somnid.sync.service import SyncConflict, SyncStatus


class SyncConflictOut(Schema):
    path: str = Field(description="The conflict file: the other machine's whole version.")
    entry: str = Field(description="The entry file beside it, which kept this machine's.")
    kind: str | None = None
    name: str | None = None
    text: str = Field(description="The conflict file's text (its first 20,000 characters).")
    entry_text: str | None = Field(
        None, description="The entry file's text, this machine's version (null: it is gone)."
    )
    merged_on: str | None = Field(
        None,
        description="Set when another machine's merge set the file aside (its id): then the "
        "entry holds that machine's version and the file the remote's at that merge, which may "
        "be this machine's own. Null: this machine's merge (the descriptions above hold).",
    )

    @classmethod
    def of(cls, conflict: SyncConflict) -> SyncConflictOut:
        return cls(
            path=conflict.path,
            entry=conflict.entry,
            kind=conflict.kind,
            name=conflict.name,
            merged_on=conflict.merged_on,
            text=conflict.text,
            entry_text=conflict.entry_text,
        )


class SyncStatusOut(Schema):
    enabled: bool
    detail: str | None = Field(None, description="Why sync is off.")
    remote: str | None = Field(None, description="The remote's URL, its password masked.")
    machine: str | None = Field(None, description="This data dir's machine id.")
    state: Literal["off", "idle", "running", "failed"]
    interval_s: float | None = None
    last_pull: str | None = None
    last_push: str | None = None
    last_error: str | None = Field(None, description="Why the last round failed, if it did.")
    last_error_at: str | None = None
    ahead: int | None = Field(None, description="Local commits the remote has not got yet.")
    behind: int | None = Field(None, description="Fetched commits not merged here yet.")
    changed: int = Field(0, description="Files the last round's merge changed here.")
    conflicts: list[SyncConflictOut]

    @classmethod
    def of(cls, status: SyncStatus) -> SyncStatusOut:
        return cls(
            enabled=status.enabled,
            detail=status.detail,
            remote=status.remote,
            machine=status.machine,
            state=status.state,
            interval_s=status.interval_s,
            last_pull=status.last_pull,
            last_push=status.last_push,
            last_error=status.last_error,
            last_error_at=status.last_error_at,
            ahead=status.ahead,
            behind=status.behind,
            changed=status.changed,
            conflicts=[SyncConflictOut.of(c) for c in status.conflicts],
        )
