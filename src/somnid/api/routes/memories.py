from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Query, Response, status

from somnid.api.deps import IfMatchDep, IfNoneMatchDep, RuntimeDep
from somnid.api.schemas.common import (
    ArchiveRequest,
    MemoryCreate,
    MemoryOut,
    MemoryPage,
    MemoryPatch,
    MemoryReplace,
    MemorySummary,
)
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.runtime import Runtime

router = APIRouter(prefix="/v1/memories", tags=["memories"])


def _answer(runtime: Runtime, entry: Entry, response: Response) -> MemoryOut:
    response.headers["ETag"] = f'"{entry.etag}"'
    return MemoryOut.of(entry, runtime.clock.tz)


async def _update(
    runtime: Runtime,
    kind: Kind,
    name: str,
    body: MemoryReplace | MemoryPatch,
    if_match: str | None,
    if_none_match: tuple[str, ...] | None,
    response: Response,
) -> MemoryOut:
    entry = await runtime.memories.update(
        kind,
        name,
        description=body.description,
        body=body.body,
        fields=dict(body.fields),
        if_match=if_match,
        if_none_match=if_none_match,
    )
    return _answer(runtime, entry, response)


@router.get("", name="listMemories", response_model=MemoryPage)
async def list_memories(
    runtime: RuntimeDep,
    kind: Annotated[
        list[Kind] | None, Query(description="Repeat to ask for several kinds.")
    ] = None,
    text: Annotated[
        str | None, Query(max_length=500, description="Case-insensitive substring.")
    ] = None,
    archived: Annotated[bool, Query(description="Include archived entries.")] = False,
    archived_only: Annotated[
        bool, Query(alias="archivedOnly", description="Archived entries alone.")
    ] = False,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> MemoryPage:
    """List entries, newest layout order (kind, then name), with optional filters."""
    kinds = tuple(dict.fromkeys(kind)) if kind else tuple(Kind)  # a kind asked twice: once
    page = await runtime.memories.list(
        kinds,
        text=text,
        archived="only" if archived_only else archived,
        offset=offset,
        limit=limit,
    )
    tz = runtime.clock.tz
    return MemoryPage(
        items=[MemorySummary.of(entry, tz) for entry in page.items],
        total=page.total,
        offset=page.offset,
        limit=page.limit,
    )


@router.post(
    "/{kind}", name="createMemory", response_model=MemoryOut, status_code=status.HTTP_201_CREATED
)
async def create_memory(
    kind: Kind, body: MemoryCreate, runtime: RuntimeDep, response: Response
) -> MemoryOut:
    """Create an entry. Its Markdown file is written atomically before this answers."""
    entry = await runtime.memories.create(
        kind, body.name, description=body.description, body=body.body, fields=dict(body.fields)
    )
    response.headers["Location"] = f"/v1/memories/{kind.value}/{quote(entry.name)}"
    return _answer(runtime, entry, response)


@router.get("/{kind}/{name}", name="getMemory", response_model=MemoryOut)
async def get_memory(
    kind: Kind,
    name: str,
    runtime: RuntimeDep,
    response: Response,
    archived: Annotated[bool, Query(description="Read from the archive.")] = False,
) -> MemoryOut:
    """Read one entry fresh from its file (hand edits show at once). Sends its ETag."""
    entry = await runtime.memories.get(kind, name, archived=archived)
    return _answer(runtime, entry, response)


@router.put("/{kind}/{name}", name="replaceMemory", response_model=MemoryOut)
async def replace_memory(
    kind: Kind,
    name: str,
    body: MemoryReplace,
    runtime: RuntimeDep,
    if_match: IfMatchDep,
    if_none_match: IfNoneMatchDep,
    response: Response,
) -> MemoryOut:
    """Replace description and body. With If-Match, a stale write is refused (412); with
    If-None-Match (``*``, or ETags), a write over an existing (or a listed) version too."""
    return await _update(runtime, kind, name, body, if_match, if_none_match, response)


@router.patch("/{kind}/{name}", name="patchMemory", response_model=MemoryOut)
async def patch_memory(
    kind: Kind,
    name: str,
    body: MemoryPatch,
    runtime: RuntimeDep,
    if_match: IfMatchDep,
    if_none_match: IfNoneMatchDep,
    response: Response,
) -> MemoryOut:
    """Change some parts; unknown front-matter keys and comments are kept. If-Match and
    If-None-Match as for PUT."""
    return await _update(runtime, kind, name, body, if_match, if_none_match, response)


@router.post("/{kind}/{name}/archive", name="archiveMemory", response_model=MemoryOut)
async def archive_memory(
    kind: Kind,
    name: str,
    runtime: RuntimeDep,
    if_match: IfMatchDep,
    response: Response,
    body: ArchiveRequest | None = None,
) -> MemoryOut:
    """Move an entry into the archive (never deleted; an older archived copy is kept)."""
    reason = body.reason if body else "archived"
    entry = await runtime.memories.archive(kind, name, reason=reason, if_match=if_match)
    return _answer(runtime, entry, response)


@router.post("/{kind}/{name}/restore", name="restoreMemory", response_model=MemoryOut)
async def restore_memory(
    kind: Kind, name: str, runtime: RuntimeDep, response: Response
) -> MemoryOut:
    """Bring an archived entry (by its archive name) back to its live name."""
    entry = await runtime.memories.restore(kind, name)
    return _answer(runtime, entry, response)
