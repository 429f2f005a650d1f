"""The postgres index's write path: one entry's row, its term counts and dates, shared by
the daemons that derive it (``sources``). Runs inside the caller's transaction."""

from __future__ import annotations

from typing import Any

from somnid.recall.backend import CONTEXT_CHARS, CONTEXT_TURNS, KIND_CODE, Document
from somnid.recall.pg_sql import MINE
from somnid.recall.terms import COLUMNS, term_counts


def upsert(conn: Any, doc: Document, source: str, model: str | None) -> tuple[int, bool]:
    """One entry as ``source`` derived it, in the caller's transaction: (id, whether its
    searchable text changed). A row another daemon made from the same file (path and
    hash) is shared, not copied; this daemon's older row of the path is let go."""
    me = {"me": [source], "path": doc.path}
    old = conn.execute(
        f"SELECT id, file_hash, text_hash FROM somnid.entries WHERE path = %(path)s AND {MINE}",
        me,
    ).fetchone()
    text = doc.text
    if old is not None and old[1] != doc.file_hash:
        let_go(conn, int(old[0]), source)
    context, far = _context(conn, doc.session, source)
    counts, length = term_counts(
        (text.fts_name, text.fts_description, text.fts_tags, text.fts_body, context, far)
    )
    values = {
        **me,
        "file_hash": doc.file_hash, "kind": doc.kind.value, "name": doc.name,
        "text_hash": text.hash, "embed_hash": text.embed_hash,
        "embed_text": text.embed_text, "score": doc.score, "project": doc.project,
        "related": list(doc.related), "session": doc.session, "day": doc.day,
        "asks": doc.asks, "body": text.fts_body, "terms_len": length,
        "search_text": f"{text.fts_name}\n{text.fts_description}\n{text.fts_body}".casefold(),
    }  # fmt: skip
    # PostgreSQL's text holds no NUL (a file typed by hand may): refused, the same batch
    # failed every sync again and nothing after it was indexed.
    values = {key: _no_nul(value) for key, value in values.items()}
    entry_id, inserted = conn.execute(
        "INSERT INTO somnid.entries (path, file_hash, kind, name, text_hash, embed_hash,"
        " embed_text, score, project, related, session, day, asks, search_text, body,"
        " terms_len, sources) VALUES (%(path)s, %(file_hash)s, %(kind)s, %(name)s,"
        " %(text_hash)s, %(embed_hash)s, %(embed_text)s, %(score)s, %(project)s,"
        " %(related)s, %(session)s, %(day)s, %(asks)s, %(search_text)s, %(body)s,"
        " %(terms_len)s, %(me)s)"
        " ON CONFLICT (path, file_hash) DO UPDATE SET score = excluded.score,"
        " sources = CASE WHEN entries.sources @> excluded.sources THEN entries.sources"
        " ELSE entries.sources || excluded.sources END"
        " RETURNING id, (xmax = 0)",
        values,
    ).fetchone()
    entry_id = int(entry_id)
    if inserted:
        terms = list(counts)
        columns = [[counts[t][c] for t in terms] for c in range(COLUMNS)]
        conn.execute(
            "INSERT INTO somnid.terms (term, entry_id, kind, row_len, n0, n1, n2, n3, n4, n5)"
            " SELECT t, %s, %s, %s, a, b, c, d, e, f FROM unnest(%s::text[], %s::int2[],"
            " %s::int2[], %s::int2[], %s::int2[], %s::int2[], %s::int2[])"
            " AS u(t, a, b, c, d, e, f)",
            (entry_id, KIND_CODE[doc.kind], length, terms, *columns),
        )
        if doc.dates:
            conn.execute(
                "INSERT INTO somnid.dates (entry_id, first_day, last_day)"
                " SELECT %s, f, l FROM unnest(%s::int[], %s::int[]) AS u(f, l)",
                (entry_id, [d[0] for d in doc.dates], [d[1] for d in doc.dates]),
            )
        if model is not None:
            conn.execute(
                "UPDATE somnid.entries e SET vec = v.vec FROM somnid.vectors v"
                " WHERE e.id = %s AND v.embed_hash = e.embed_hash AND v.model = %s",
                (entry_id, model),
            )
    changed = old is None or old[2] != text.hash
    return entry_id, changed


def _context(conn: Any, session: str | None, source: str) -> tuple[str, str]:
    """The bodies of the turns before in this entry's session (it is the newest)."""
    if session is None:
        return "", ""
    found = conn.execute(
        f"SELECT body FROM somnid.entries WHERE session = %(session)s AND {MINE}"
        " ORDER BY id DESC LIMIT %(turns)s",
        {"me": [source], "session": session, "turns": CONTEXT_TURNS},
    ).fetchall()
    bodies = [str(body)[:CONTEXT_CHARS] for (body,) in found]
    return "".join(bodies[:1]), "\n".join(bodies[1:])


def let_go(conn: Any, entry_id: int, source: str) -> None:
    """This daemon no longer derives the row: it goes if no other daemon does."""
    conn.execute(
        "UPDATE somnid.entries SET sources = array_remove(sources, %s) WHERE id = %s",
        (source, entry_id),
    )
    conn.execute("DELETE FROM somnid.entries WHERE id = %s AND sources = '{}'", (entry_id,))


def _no_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_no_nul(item) for item in value]
    return value
