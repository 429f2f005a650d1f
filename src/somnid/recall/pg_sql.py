"""The postgres index's search statements: BM25 over stored term counts, and a recall pass
(keyword hits, HNSW neighbours, the rows, cosines and texts) in one statement.

Parameters: ``%(me)s`` this daemon's source (a one-element array), ``%(terms)s`` the query's
index terms, ``%(n)s`` / ``%(avg)s`` the rows and their mean length in terms,
``%(w0)s``..``%(w5)s`` the column weights, ``%(codes)s`` / ``%(kinds)s`` the kinds (codes
in ``terms``, names in ``entries``), ``%(q)s`` the query vector, ``%(ids)s`` ids wanted
whatever their scores, ``%(pool)s`` how many of each kind of candidate.
"""

from __future__ import annotations

from somnid.recall.terms import K1, B

COLUMNS = (
    "id, path, kind, name, file_hash, text_hash, embed_hash, score, project, related,"
    " session, day, asks"
)
MINE = "sources @> %(me)s"
"""The rows this daemon derived."""

OVERFETCH = 2  # keyword rows ranked per row wanted: some may be another daemon's only

# FTS5's bm25(): IDF (floored at 1e-6; the row count is cached, and a term may meanwhile be
# in more rows than it counted) × the column-weighted count, saturated, over the
# row's length in terms against the mean, over this daemon's rows alone (another's on a
# shared database crowded its own out of the pool: an index probe). The postings of the
# query's terms are read once by the primary key (term first), each joined to its row.
_RANKED = f"""
hits AS MATERIALIZED (
    SELECT t.term, t.entry_id, t.kind, t.row_len,
        n0 * %(w0)s + n1 * %(w1)s + n2 * %(w2)s + n3 * %(w3)s + n4 * %(w4)s + n5 * %(w5)s AS tf
    FROM somnid.terms t JOIN somnid.entries e ON e.id = t.entry_id
    WHERE t.term = ANY(%(terms)s) AND e.{MINE}
),
idf AS (
    SELECT term,
        greatest(ln((greatest(%(n)s, count(*)) - count(*) + 0.5) / (count(*) + 0.5)), 1e-6) AS w
    FROM hits GROUP BY term
),
ranked AS MATERIALIZED (
    SELECT h.entry_id, sum(idf.w * h.tf * {K1 + 1}
        / (h.tf + {K1} * (1 - {B} + {B} * h.row_len / %(avg)s))) AS rank
    FROM hits h JOIN idf USING (term) WHERE h.kind = ANY(%(codes)s)
    GROUP BY h.entry_id HAVING sum(h.tf) > 0
    ORDER BY rank DESC, h.entry_id LIMIT %(pool)s * {OVERFETCH}
)"""

BM25 = f"""WITH {_RANKED}
SELECT r.entry_id, r.rank FROM ranked r JOIN somnid.entries e ON e.id = r.entry_id
WHERE e.{MINE} ORDER BY r.rank DESC, r.entry_id LIMIT %(pool)s
"""

# The nearest of this daemon's rows. Filtered after the neighbours were taken, another
# daemon's rows on a shared database filled them, and one with few rows of its own found
# none of them by meaning. With the sources' statistics (a sync takes them), the planner
# scans the HNSW index (iteratively, ``hnsw.iterative_scan``) while most rows are this
# daemon's, and reads its few rows exactly when they are few.
_NEAR = f"""
near AS MATERIALIZED (
    SELECT id FROM somnid.entries WHERE kind = ANY(%(kinds)s) AND {MINE}
    ORDER BY vec <=> %(q)s::halfvec LIMIT %(pool)s
)"""


def gather(*, keywords: bool, vector: bool) -> str:
    """One recall pass: the rows of the keyword hits, of the nearest vectors and of
    ``%(ids)s``, each with its cosine (or NULL), searchable text and BM25 (or NULL)."""
    parts = [_RANKED] if keywords else []
    if vector:
        parts.append(_NEAR)
    wanted = ["SELECT unnest(%(ids)s::bigint[])"]
    if keywords:
        wanted.append("SELECT entry_id FROM ranked")
    if vector:
        wanted.append("SELECT id FROM near")
    cosine = "1 - (e.vec <=> %(q)s::halfvec)" if vector else "NULL::float8"
    rank = "r.rank" if keywords else "NULL::float8"
    joined = " LEFT JOIN ranked r ON r.entry_id = e.id" if keywords else ""
    head = f"WITH {', '.join(parts)}\n" if parts else ""
    return (
        f"{head}SELECT {', '.join('e.' + c.strip() for c in COLUMNS.split(','))},"
        f" {cosine}, e.search_text, {rank} FROM somnid.entries e{joined}"
        f" WHERE e.id IN ({' UNION '.join(wanted)}) AND e.{MINE}"
    )
