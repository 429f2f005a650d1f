"""The index's door: what recall, the reconciler and the embedder ask of it, whatever holds it.

Two backends honour :class:`IndexBackend`: SQLite (``recall/index.py``, the default: FTS5
and the vectors in memory) and PostgreSQL with pgvector (``recall/pg_index.py``: BM25 from
stored term counts and HNSW over ``halfvec``, for a large memory or several daemons). Both
are derived from the Markdown files and rebuilt from them; blocking methods (plain ``def``),
run in threads by their callers.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from somnid.memory.kinds import Kind
from somnid.recall.text import IndexedText
from somnid.recall.vectors import Vector

INDEXED_KINDS = (Kind.KNOWLEDGE, Kind.EPISODE, Kind.SKILL, Kind.INTENTION)
KIND_CODE = {kind: code for code, kind in enumerate(INDEXED_KINDS, start=1)}

# Keyword column weights: name, description, tags, body, context (the turn before, in the
# same session); the far context (the two turns before that: a subject a reply may still
# follow, less surely than the turn it answers) weighs FAR_SHARE of the context.
DEFAULT_FIELD_WEIGHTS = (3.0, 2.0, 2.0, 1.0, 0.0)
CONTEXT_CHARS, CONTEXT_TURNS, FAR_SHARE = 600, 3, 0.5  # chars of each turn, turns, share


def column_weights(field_weights: tuple[float, ...]) -> tuple[float, ...]:
    """The six keyword columns' weights from the five settings (far is a share of context)."""
    return (*field_weights[:5], field_weights[4] * FAR_SHARE)


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    path: str
    kind: Kind
    name: str
    file_hash: str
    text_hash: str
    embed_hash: str
    score: float
    project: str | None
    related: tuple[str, ...]
    session: str | None = None
    day: int | None = None
    asks: bool = False

    def in_scope(self, kinds: tuple[Kind, ...], project: str | None) -> bool:
        """Of one of ``kinds``, and of ``project`` or of none (``None``: any project)."""
        return self.kind in kinds and (project is None or self.project in (None, project))


@dataclass(frozen=True, slots=True)
class Document:
    """What the reconciler hands the index for one entry."""

    path: str
    kind: Kind
    name: str
    file_hash: str
    text: IndexedText
    score: float
    project: str | None
    related: tuple[str, ...]
    session: str | None = None  # episodes of one conversation share it
    day: int | None = None  # the ordinal of ``when``
    asks: bool = False  # the text ends as a question
    dates: tuple[tuple[int, int], ...] = ()  # days the entry is about (``when``, its text)


@dataclass(frozen=True, slots=True)
class Gathered:
    """One recall pass's candidates: their rows, cosines to the query (when it has a
    vector) and searchable texts (at least those of the keyword hits, when asked). Rows and
    texts the caller said it holds (``known``) may be left out."""

    rows: dict[int, Row]
    cosines: dict[int, float] = field(default_factory=dict)
    texts: dict[int, str] = field(default_factory=dict)
    keyword: dict[int, float] | None = None  # the keyword hits, when asked for ``terms``


@dataclass(frozen=True, slots=True)
class BackendInfo:
    """What health and doctor say of the index: where it is and what serves it."""

    backend: Literal["sqlite", "postgres"]
    server_version: str | None
    extension: str | None  # "fts5", "vector 0.8.6"
    location: str  # the file, or the server without its password
    reachable: bool = True
    error: str | None = None


class IndexBackend(Protocol):
    """The operations on the derived index. Ids are the backend's row ids; a backend shared
    by several daemons shows each only the rows it derived itself."""

    one_pass: bool
    """True: :meth:`gather` is given the keyword terms too (a server a round trip away);
    False: the keyword search runs beside the query's embedding, then ``gather``."""

    def close(self) -> None: ...
    def describe(self) -> BackendInfo: ...

    # rows
    def rows(self) -> list[Row]: ...
    def row_by_path(self, path: str) -> Row | None: ...
    def rows_under(self, prefix: str) -> list[Row]: ...
    def rows_by_id(self, ids: Iterable[int]) -> dict[int, Row]: ...
    def ids_by_name(self, names: Iterable[str]) -> dict[str, int]: ...
    def texts(self, ids: Iterable[int]) -> dict[int, str]: ...
    def upsert_many(self, docs: list[Document]) -> list[tuple[int, bool]]: ...
    def delete(self, path: str) -> int | None: ...
    def forget_deleted(self) -> None: ...
    def drop_unused_vectors(self) -> int: ...
    def invalidate(self, *, vectors: bool = False) -> None: ...
    def count_invalidated(self) -> int: ...

    # time and sessions
    def dates_of(self, ids: Iterable[int]) -> dict[int, list[tuple[int, int]]]: ...
    def ids_in_time(
        self, first: int, last: int, kinds: tuple[Kind, ...], limit: int
    ) -> list[int]: ...
    def neighbours(self, rows: Iterable[Row]) -> dict[int, tuple[int | None, int | None]]: ...

    # search
    def keyword_search(
        self, terms: list[str], kinds: tuple[Kind, ...], limit: int
    ) -> list[tuple[int, float]]: ...
    def gather(
        self,
        vector: Vector | None,
        ids: set[int],
        kinds: tuple[Kind, ...],
        pool: int,
        texts_of: set[int] | None,
        terms: list[str] | None = None,
        known: Collection[int] = (),
    ) -> Gathered: ...
    def vectors_of(self, ids: Iterable[int]) -> dict[int, Vector]: ...
    def vector_count(self) -> int: ...
    def has_vectors(self) -> bool: ...

    # embedding
    def use_model(self, model: str, dim: int) -> None: ...
    def missing_vectors(self, limit: int) -> list[tuple[str, str]]: ...
    def count_missing_vectors(self) -> int: ...
    def store_vectors(self, items: list[tuple[str, Vector]]) -> None: ...

    # state
    def get_state(self, key: str) -> str | None: ...
    def set_state(self, key: str, value: str) -> None: ...
    def total(self) -> int: ...
    def counts(self) -> dict[str, int]: ...
    def size_bytes(self) -> int: ...
    def stamp_sync(self, when: dt.datetime) -> None: ...
