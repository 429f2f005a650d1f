"""The vector column of the ``postgres`` index: ``halfvec(dim)`` under an HNSW index, made
when a model is first used and again when the schema was made anew (dropped by hand)."""

from __future__ import annotations

from typing import Any

from somnid.errors import IndexUnavailable

COLUMN_LOCK = 0x534F4D4F  # an advisory lock: two daemons adding the column at once


def make_column(conn: Any, model: str, dim: int) -> None:
    """Add ``vec halfvec(dim)`` and its HNSW index where missing (in the caller's
    transaction); a column of another dimension refuses the model."""
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (COLUMN_LOCK,))
    found = conn.execute(
        "SELECT atttypmod FROM pg_attribute WHERE attrelid = 'somnid.entries'::regclass"
        " AND attname = 'vec' AND NOT attisdropped"
    ).fetchone()
    if found is None:
        conn.execute(f"ALTER TABLE somnid.entries ADD COLUMN vec halfvec({int(dim)})")
    elif int(found[0]) != dim:
        raise IndexUnavailable(
            f"the shared index holds {found[0]}-dim vectors; this daemon's model"
            f" {model} makes {dim}: every daemon on one index needs the same model"
        )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS entries_vec ON somnid.entries"
        " USING hnsw (vec halfvec_cosine_ops)"
    )
