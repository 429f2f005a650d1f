"""How the SQLite index keeps an entry: its row in ``entries``, its text in ``fts`` (with
the turns before it in its session) and its dates; read back as a :class:`Row`."""

from __future__ import annotations

import json
import sqlite3

from somnid.memory.kinds import Kind
from somnid.recall.backend import CONTEXT_CHARS, CONTEXT_TURNS, Document, Row

ROW_COLUMNS = (
    "id, path, kind, name, file_hash, text_hash, embed_hash, score, project, related,"
    " session, day, asks"
)


_KINDS = {kind.value: kind for kind in Kind}


def read_row(values: tuple[object, ...]) -> Row:
    # Most entries link nothing: no JSON to parse for them (a search reads ~100 rows).
    related = json.loads(str(values[9])) if values[9] and values[9] != "[]" else []
    return Row(
        id=int(values[0]),  # type: ignore[call-overload]
        path=str(values[1]),
        kind=_KINDS[str(values[2])],
        name=str(values[3]),
        file_hash=str(values[4]),
        text_hash=str(values[5]),
        embed_hash=str(values[6]),
        score=float(values[7]),  # type: ignore[arg-type]
        project=None if values[8] is None else str(values[8]),
        related=tuple(related),
        session=None if values[10] is None else str(values[10]),
        day=None if values[11] is None else int(values[11]),  # type: ignore[call-overload]
        asks=bool(values[12]),
    )


def _context(conn: sqlite3.Connection, session: str | None, entry_id: int) -> tuple[str, str]:
    """The body of the entry just before this one in its session (what a reply answers),
    and those of the few before that (the subject it may still follow)."""
    if session is None:
        return "", ""
    found = conn.execute(
        "SELECT fts.body FROM entries JOIN fts ON fts.rowid = entries.id"
        " WHERE entries.session = ? AND entries.id < ? ORDER BY entries.id DESC LIMIT ?",
        (session, entry_id, CONTEXT_TURNS),
    ).fetchall()
    bodies = [str(body)[:CONTEXT_CHARS] for (body,) in found]
    return "".join(bodies[:1]), "\n".join(bodies[1:])


def upsert(conn: sqlite3.Connection, doc: Document) -> tuple[int, bool]:
    text = doc.text
    related = json.dumps(list(doc.related), ensure_ascii=False)
    existing = conn.execute(
        "SELECT id, text_hash FROM entries WHERE path = ?", (doc.path,)
    ).fetchone()
    if existing is None:
        cursor = conn.execute(
            "INSERT INTO entries (path, kind, name, file_hash, text_hash, embed_hash,"
            " embed_text, score, project, related, session, day, asks)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (doc.path, doc.kind.value, doc.name, doc.file_hash, text.hash,
             text.embed_hash, text.embed_text, doc.score, doc.project, related,
             doc.session, doc.day, int(doc.asks)),
        )  # fmt: skip
        entry_id = int(cursor.lastrowid or 0)
        changed = True
    else:
        entry_id, old_hash = int(existing[0]), str(existing[1])
        changed = old_hash != text.hash
        conn.execute(
            "UPDATE entries SET kind=?, name=?, file_hash=?, text_hash=?, embed_hash=?,"
            " embed_text=?, score=?, project=?, related=?, session=?, day=?, asks=? WHERE id=?",
            (doc.kind.value, doc.name, doc.file_hash, text.hash, text.embed_hash,
             text.embed_text, doc.score, doc.project, related, doc.session, doc.day,
             int(doc.asks), entry_id),
        )  # fmt: skip
        if changed:
            conn.execute("DELETE FROM fts WHERE rowid = ?", (entry_id,))
    if changed:
        conn.execute(
            "INSERT INTO fts (rowid, name, description, tags, body, context, far)"
            " VALUES (?,?,?,?,?,?,?)",
            (entry_id, text.fts_name, text.fts_description, text.fts_tags, text.fts_body,
             *_context(conn, doc.session, entry_id)),
        )  # fmt: skip
    conn.execute("DELETE FROM dates WHERE entry_id = ?", (entry_id,))
    conn.executemany(
        "INSERT INTO dates (entry_id, start, end) VALUES (?,?,?)",
        [(entry_id, start, end) for start, end in doc.dates],
    )
    return entry_id, changed
