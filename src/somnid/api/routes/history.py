"""History routes: what changed, a commit's diff per entry, revert, and purge."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from somnid.api.deps import IfMatchDep, IfNoneMatchDep, RuntimeDep
from somnid.api.schemas.history import (
    CommitDetail,
    CommitOut,
    EntryHistoryPage,
    HistoryPage,
    IdentityChangeOut,
    IdentityPage,
    PurgeIn,
    PurgeOut,
    PurgeStatusOut,
    RevertOut,
)
from somnid.errors import InvalidInput
from somnid.memory.kinds import Kind

router = APIRouter(tags=["history"])
MAX_OFFSET = 2**31 - 1
NO_CONTROLS = r"^[^\x00-\x1f\x7f]*$"
EntryName = Annotated[str, Path(max_length=200)]
CommitId = Annotated[str, Path(min_length=4, max_length=40, pattern="^[0-9a-fA-F]+$")]


@router.get("/v1/history", name="listHistory", response_model=HistoryPage)
async def list_history(
    runtime: RuntimeDep,
    # git's --skip is a C int: a larger offset wrapped round and listed the newest commits
    # (and, in a long fuzz run, answered 500).
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    dreams: Annotated[bool, Query(description="Only the dreams' commits.")] = False,
    # NUL cannot be handed to git (it answered 500); no file name holds a control character.
    path: Annotated[
        str | None, Query(max_length=300, pattern=NO_CONTROLS, description="Only this file.")
    ] = None,
) -> HistoryPage:
    """Commits of the memory history, newest first, with the entries each changed."""
    items, total = await runtime.history.commits(
        offset=offset, limit=limit, dreams=dreams, path=path
    )
    return HistoryPage(
        items=[CommitOut.of(c) for c in items], total=total, offset=offset, limit=limit
    )


@router.get(
    "/v1/history/entries/{kind}/{name}", name="getEntryHistory", response_model=EntryHistoryPage
)
async def get_entry_history(
    kind: Kind,
    name: EntryName,
    runtime: RuntimeDep,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
) -> EntryHistoryPage:
    """The commits that touched one entry, newest first, each with its diff of that entry:
    writes through the API, hand edits, dreams, reverts."""
    items, total = await runtime.history.entry_history(kind, name, offset=offset, limit=limit)
    return EntryHistoryPage(
        kind=kind.value,
        name=name,
        items=[CommitDetail.of(info, diffs) for info, diffs in items],
        total=total,
        offset=offset,
        limit=limit,
    )


@router.post(
    "/v1/history/entries/{kind}/{name}/{commit}/revert",
    name="revertEntryChange",
    response_model=RevertOut,
)
async def revert_entry_change(
    kind: Kind, name: EntryName, commit: CommitId, runtime: RuntimeDep
) -> RevertOut:
    """Undo what one commit changed of this entry only (the rest of the commit stays); 409
    if a later change touched the entry."""
    return RevertOut.of(await runtime.history.revert_entry(kind, name, commit))


@router.get("/v1/history/identity", name="listIdentityChanges", response_model=IdentityPage)
async def list_identity_changes(
    runtime: RuntimeDep,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    limit: Annotated[int, Query(ge=1, le=200)] = 20,
    dreams: Annotated[bool, Query(description="Only the dreams' changes.")] = False,
) -> IdentityPage:
    """Every change to a profile (the agent's about_me, a user's profile), newest first, with
    who made it (a dream, its id), its diff per profile and what reverted it: for review."""
    items, total = await runtime.history.identity_changes(offset=offset, limit=limit, dreams=dreams)
    return IdentityPage(
        items=[IdentityChangeOut.of(item) for item in items],
        total=total,
        offset=offset,
        limit=limit,
    )


@router.get("/v1/history/purge", name="getPurgeStatus", response_model=PurgeStatusOut)
async def get_purge_status(runtime: RuntimeDep) -> PurgeStatusOut:
    """The purge running now, if any: what it purges, how many commits its history rewrite
    goes through, how many are done, and how long it should take."""
    return PurgeStatusOut.of(runtime.history.purge_status())


@router.get("/v1/history/{commit}", name="getHistoryCommit", response_model=CommitDetail)
async def get_commit(commit: CommitId, runtime: RuntimeDep) -> CommitDetail:
    """One commit and its diff, per entry file."""
    return CommitDetail.of(*await runtime.history.show(commit))


@router.post("/v1/history/{commit}/revert", name="revertCommit", response_model=RevertOut)
async def revert_commit(commit: CommitId, runtime: RuntimeDep) -> RevertOut:
    """A new commit restoring what this one changed; 409 if a later change touched it."""
    return RevertOut.of(await runtime.history.revert(commit))


@router.post("/v1/dreams/{id}/revert", name="revertDream", response_model=RevertOut)
async def revert_dream(
    id: Annotated[str, Path(max_length=60, description="The journal's dream_id.")],
    runtime: RuntimeDep,
) -> RevertOut:
    """Undo a dream: its commit reverted, the index reconciled; 409 if a later change
    touched one of its entries."""
    return RevertOut.of(await runtime.history.revert_dream(id))


@router.post("/v1/memories/{kind}/{name}/purge", name="purgeMemory", response_model=PurgeOut)
async def purge_memory(
    kind: Kind,
    name: EntryName,
    runtime: RuntimeDep,
    if_match: IfMatchDep,
    if_none_match: IfNoneMatchDep,
    confirm: Annotated[str | None, Query(max_length=200, description="The name again.")] = None,
    history: Annotated[bool, Query(description="Remove its past versions too.")] = False,
    body: PurgeIn | None = None,
) -> PurgeOut:
    """Delete an entry (live and archived) for good, optionally from history and from the
    session logs too; audited. With If-Match, only while the live entry has that ETag (412
    when it changed or is gone); with `If-None-Match: *`, only while no live entry has the
    name (412: the purge of an archived copy would delete it too)."""
    options = body or PurgeIn()
    if if_none_match is not None and (if_none_match != ("*",) or if_match is not None):
        raise InvalidInput("a purge takes If-Match or If-None-Match: * (no live entry of the name)")
    done = await runtime.history.purge(
        kind,
        name,
        confirm=confirm,
        history=history,
        scrub_logs=options.scrub_logs,
        phrases=tuple(options.phrases),
        if_match=if_match,
        none_live=if_none_match is not None,
    )
    return PurgeOut.of(done)
