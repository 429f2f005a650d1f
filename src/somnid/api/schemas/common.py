"""Request and response bodies of the HTTP API (camelCase on the wire)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from somnid.memory.clock import to_datetime
from somnid.memory.entry import Entry
from somnid.memory.kinds import Kind
from somnid.memory.names import MAX_NAME_BYTES, MAX_NAME_CHARS
from somnid.memory.text import control_char

MAX_TEXT = 200_000


class Schema(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


def _printable(value: str) -> str:
    ch = control_char(value)
    if ch is not None:
        raise ValueError(f"holds a control character ({ord(ch):#x})")
    return value


Id = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_printable)]
"""A client's id or label (a session, a user, a project): 1–200 characters, no controls."""


def jsonable(value: Any) -> Any:
    """Front-matter values as JSON: times as ISO strings, YAML collections as plain ones."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def _time(entry: Entry, key: str, tz: dt.tzinfo) -> str | None:
    when = to_datetime(entry.meta.get(key), tz)
    return when.isoformat() if when else None


class MemorySummary(Schema):
    kind: Kind
    name: str
    archived: bool
    path: str = Field(description="The file, relative to the data dir.")
    etag: str
    description: str
    type: str
    score: float
    stability: int
    created: str | None
    last_used: str | None

    @classmethod
    def of(cls, entry: Entry, tz: dt.tzinfo) -> MemorySummary:
        vitals = entry.vitals(tz)
        return cls(
            kind=entry.kind,
            name=entry.name,
            archived=entry.archived,
            path=str(entry.path),
            etag=entry.etag,
            description=entry.description,
            type=entry.entry_type,
            score=round(vitals.score, 4),
            stability=vitals.stability,
            created=_time(entry, "created", tz),
            last_used=_time(entry, "last_used", tz),
        )


class MemoryOut(MemorySummary):
    meta: dict[str, Any] = Field(description="The whole front-matter, as JSON.")
    body: str

    @classmethod
    def of(cls, entry: Entry, tz: dt.tzinfo) -> MemoryOut:
        summary = MemorySummary.of(entry, tz)
        return cls(**summary.model_dump(), meta=jsonable(dict(entry.meta)), body=entry.body)


class MemoryPage(Schema):
    items: list[MemorySummary]
    total: int
    offset: int
    limit: int


# JSON has no NaN or Infinity (Python's parser takes them): a front-matter number is finite.
Number = Annotated[float, Field(allow_inf_nan=False)]
FieldValue = str | int | Number | bool | list[str | int | Number | bool] | None


class MemoryCreate(Schema):
    name: str | None = Field(
        None,
        # Stated here, enforced once by the store's slugify: one limit, one 400 invalid_name
        # message (a schema check would answer 422 for 101 characters, 400 for 201 bytes).
        json_schema_extra={"maxLength": MAX_NAME_CHARS},
        description=f"Becomes a safe slug (at most {MAX_NAME_CHARS} characters and "
        f"{MAX_NAME_BYTES} bytes of UTF-8; no emoji; unique regardless of case). Optional for "
        "episodes and intentions (generated).",
    )
    description: str = Field("", max_length=2000)
    body: str = Field("", max_length=MAX_TEXT)
    fields: dict[str, FieldValue] = Field(
        default_factory=dict,
        description="More front-matter keys: tags, related, project, salience, due, cue, "
        "priority, verified, type…",
    )


class MemoryReplace(Schema):
    description: str = Field(max_length=2000)
    body: str = Field(max_length=MAX_TEXT)
    fields: dict[str, FieldValue] = Field(
        default_factory=dict, description="Keys to set; null removes a key. Others are kept."
    )


class MemoryPatch(Schema):
    description: str | None = Field(None, max_length=2000)
    body: str | None = Field(None, max_length=MAX_TEXT)
    fields: dict[str, FieldValue] = Field(
        default_factory=dict, description="Keys to set; null removes a key. Others are kept."
    )


class ArchiveRequest(Schema):
    reason: str = Field("archived", max_length=200)


class Change(Schema):
    kind: Kind
    name: str
    score_before: float
    score_after: float


class DecayOut(Schema):
    day: str
    decayed: list[Change]
    retired: list[Change]
    expired_intentions: list[str]
    skipped_broken: list[str]


class FieldIssue(BaseModel):
    field: str
    message: str


class ProblemDetails(BaseModel):
    """RFC 9457 problem details: the body of every error somnid answers."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(examples=["urn:somnid:problem:not_found"])
    title: str
    status: int
    detail: str
    code: str = Field(description="Stable machine-readable error code.")
    instance: str | None = None
    errors: list[FieldIssue] | None = None


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    "4XX": {
        "model": ProblemDetails,
        "description": "The request was refused; the body says why.",
    },
    "5XX": {
        "model": ProblemDetails,
        "description": "somnid could not serve the request (storage or a dependency).",
    },
}


class BrokenFileOut(Schema):
    path: str
    reason: str


class ComponentStatus(Schema):
    status: Literal["ok", "off", "starting", "unavailable", "degraded"]
    detail: str | None = None


class IndexComponent(Schema):
    status: Literal["ok", "degraded", "unavailable"] = Field(
        description="degraded: the index missed changes (its disk full, its server away a "
        "moment) and a sync is catching up; recall may miss what they wrote until then"
    )
    backend: Literal["sqlite", "postgres"]
    server_version: str | None = Field(
        None, description="SQLite's library version, or the PostgreSQL server's; with the token"
    )
    extension: str | None = Field(
        None, description="fts5, or pgvector's version (vector 0.8.6); with the token"
    )
    detail: str | None = Field(
        None,
        description="where the index is (the server without its password) and, when it "
        "cannot be reached, why; only with the token",
    )


class HealthOut(Schema):
    status: Literal["ok", "degraded"]
    version: str
    data_dir: str
    memory_dir: str
    skill_dir: str
    llm: ComponentStatus
    vector: ComponentStatus
    storage: ComponentStatus = Field(
        description="degraded while the data dir is read-only or (nearly) full, or since a "
        "write failed for that reason (until one succeeds or the space is back)"
    )
    index: IndexComponent = Field(
        description="unavailable while the index's server (PostgreSQL) cannot be reached: "
        "recall answers 503 index_unavailable, writes still land in the files and are "
        "indexed once it is back"
    )
    history: ComponentStatus = Field(
        description="degraded while git refuses to commit (a stale .git/index.lock, a full "
        "disk): the writes are kept and committed once it takes them; off when history is"
    )
    pending_logs: int
    counts: dict[str, int]
    broken_files: list[BrokenFileOut]
