"""The SQLite keyword search ranks first and filters by kind after: the same hits as joining
every match to its row, whichever kinds are asked and however many of the best are others."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from somnid.memory.kinds import Kind
from somnid.recall.backend import Document
from somnid.recall.index import Index
from somnid.recall.text import IndexedText, fts_query, query_terms

KIND_SETS = [
    (Kind.EPISODE,),
    (Kind.SKILL,),
    (Kind.INTENTION,),
    (Kind.KNOWLEDGE, Kind.EPISODE, Kind.SKILL),
    (Kind.EPISODE, Kind.SKILL),
]
QUERIES = ["deploy friday", "deploy", "rollback plan", "nothing matches this"]


def doc(kind: Kind, name: str, body: str) -> Document:
    text = IndexedText(name, "", "", body, body)
    return Document(f"{kind.value}/{name}", kind, name, f"h-{name}", text, 0.5, None, ())


def documents(offset: int = 0) -> list[Document]:
    """Many strong knowledge matches, few weaker ones of each other kind."""
    docs = [
        doc(Kind.KNOWLEDGE, f"k{i + offset}", "deploy friday deploy friday rollback")
        for i in range(40)
    ]
    docs += [
        doc(Kind.EPISODE, f"e{i + offset}", f"we talked {i} times; deploy later") for i in range(7)
    ]
    docs += [
        doc(Kind.SKILL, f"s{i + offset}", "how to write a rollback plan " * (i + 1))
        for i in range(3)
    ]
    docs += [doc(Kind.INTENTION, f"p{offset}", "deploy on friday after the review")]
    return docs


def joined(
    index: Index, query: str, kinds: tuple[Kind, ...], limit: int
) -> list[tuple[int, float]]:
    """The reference: every match joined to its row, filtered, ranked, cut."""
    weights = ", ".join(str(w) for w in index.field_weights)
    marks = ",".join("?" * len(kinds))
    cursor = index.db.fetchall(
        f"SELECT fts.rowid, -bm25(fts, {weights}) AS rank FROM fts"
        f" JOIN entries ON entries.id = fts.rowid"
        f" WHERE fts MATCH ? AND entries.kind IN ({marks}) ORDER BY rank DESC LIMIT ?",
        (fts_query(query_terms(query)), *[k.value for k in kinds], limit),
    )
    return [(int(i), float(rank)) for i, rank in cursor if rank > 0]


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    index = Index(tmp_path / "index.sqlite")
    index.upsert_many(documents())
    yield index
    index.close()


@pytest.mark.parametrize("kinds", KIND_SETS)
@pytest.mark.parametrize("limit", [1, 3, 5, 10, 60])
def test_the_hits_are_those_of_the_join(index: Index, kinds: tuple[Kind, ...], limit: int) -> None:
    for query in QUERIES:
        for _twice in range(2):  # the second search of a kind set may take the other path
            hits = index.keyword_search(query_terms(query), kinds, limit)
            assert hits == joined(index, query, kinds, limit), (query, kinds, limit)
            rows = index.rows_by_id(i for i, _ in hits)
            assert all(rows[i].kind in kinds for i, _ in hits)


def test_the_hits_stay_right_after_a_write(index: Index) -> None:
    # Episodes are 7 of 51 entries: their search falls back to the join, and joins first
    # until a write; after one (now episodes rank first), the hits are still the join's.
    kinds = (Kind.EPISODE,)
    terms = query_terms("deploy")
    assert index.keyword_search(terms, kinds, 5) == joined(index, "deploy", kinds, 5)
    index.upsert_many(
        [doc(Kind.EPISODE, f"late{i}", "deploy deploy deploy friday") for i in range(80)]
    )
    hits = index.keyword_search(terms, kinds, 5)
    assert hits == joined(index, "deploy", kinds, 5)
    names = [row.name for row in index.rows_by_id(i for i, _ in hits).values()]
    assert all(name.startswith("late") for name in names)
