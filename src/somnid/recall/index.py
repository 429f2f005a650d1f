"""The SQLite index (the default backend): one row per live entry, its keyword document
(FTS5), and vectors by content, held in memory and searched by brute force.

Vectors are stored by the hash of the text they were made from and the model that made
them, so moving, renaming or reinforcing an entry never re-embeds it, and a restart
re-embeds nothing. Blocking methods (plain ``def``); callers run them in threads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from somnid.errors import IndexUnavailable
from somnid.memory.kinds import Kind
from somnid.recall.backend import (
    DEFAULT_FIELD_WEIGHTS,
    BackendInfo,
    Document,
    Gathered,
    Row,
    column_weights,
)
from somnid.recall.backend import INDEXED_KINDS as INDEXED_KINDS
from somnid.recall.backend import KIND_CODE as KIND_CODE
from somnid.recall.db import Database, query_error, unreadable
from somnid.recall.parsed import Parsed
from somnid.recall.sqlite_rows import ROW_COLUMNS, read_row, upsert
from somnid.recall.text import fts_query
from somnid.recall.vectors import Vector, VectorTable

_MISSING = (
    " FROM entries LEFT JOIN vectors"
    " ON vectors.embed_hash = entries.embed_hash AND vectors.model = ?"
    " WHERE vectors.embed_hash IS NULL"
)
ROWS_KEPT = 20_000  # parsed rows (and texts) searches keep: ~1 KB an entry
REMOVED = (
    "the index file was deleted while somnid ran: restart somnid to make it again from the"
    " files (nothing is lost: the memory files are whole)"
)


class Index:
    one_pass = False  # the keyword search runs beside the query's embedding

    def __init__(
        self, path: Path, field_weights: tuple[float, ...] = DEFAULT_FIELD_WEIGHTS
    ) -> None:
        self.db = Database(path)
        self.field_weights = column_weights(field_weights)
        self.vectors: VectorTable | None = None
        self.model: str | None = None
        # Scans the second half of a large vector table while the search's thread scans
        # the first (see vectors.SPLIT_ROWS); its thread starts with the first such scan.
        self._scan_helper = ThreadPoolExecutor(1, thread_name_prefix="somnid-vector-scan")
        # Attaching a stored vector to an entry (read, then put or remove) and storing new
        # vectors (write, then put for every entry of the text) exclude each other: else a
        # vector stored between an attach's read and its remove was lost for good, while
        # missing_vectors, which joins by text hash, no longer counted it as missing.
        self._attach_lock = threading.Lock()
        # Rows and texts searches parsed (~1 KB an entry): any write here empties them.
        self._rows: Parsed[Row] = Parsed(ROWS_KEPT)
        self._texts: Parsed[str] = Parsed(ROWS_KEPT)
        self._near: Parsed[tuple[int | None, int | None]] = Parsed(ROWS_KEPT)
        self._weights_sql = ", ".join(str(weight) for weight in self.field_weights)
        # Kinds whose keyword search joins each match to its row (see keyword_search).
        self._join_kinds: set[tuple[Kind, ...]] = set()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; what searches parsed before it is let go after it."""
        try:
            with self.db.write() as conn:
                yield conn
        finally:
            self._rows.clear()
            self._texts.clear()
            self._near.clear()
            self._join_kinds.clear()

    def close(self) -> None:
        self._scan_helper.shutdown(wait=True)
        self.db.close()

    def describe(self) -> BackendInfo:
        error = None
        if self.db.damaged:
            error = "the index file is damaged: restart somnid to make it again"
        elif self.db.removed:
            error = REMOVED
        return BackendInfo("sqlite", sqlite3.sqlite_version, "fts5", str(self.db.path), True, error)

    def size_bytes(self) -> int:
        return self.db.size_bytes()

    # ------------------------------------------------------------------ rows

    def rows(self) -> list[Row]:
        cursor = self.db.fetchall(f"SELECT {ROW_COLUMNS} FROM entries")
        return [read_row(values) for values in cursor]

    def row_by_path(self, path: str) -> Row | None:
        values = self.db.fetchone(f"SELECT {ROW_COLUMNS} FROM entries WHERE path = ?", (path,))
        return None if values is None else read_row(values)

    def rows_under(self, prefix: str) -> list[Row]:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        cursor = self.db.fetchall(
            f"SELECT {ROW_COLUMNS} FROM entries WHERE path LIKE ? ESCAPE '\\'", (escaped + "%",)
        )
        return [read_row(values) for values in cursor]

    def rows_by_id(self, ids: Iterable[int]) -> dict[int, Row]:
        generation = self._rows.generation
        kept, wanted = self._rows.lookup(ids)
        found: dict[int, Row] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            cursor = self.db.fetchall(
                f"SELECT {ROW_COLUMNS} FROM entries WHERE id IN ({marks})", chunk
            )
            for values in cursor:
                row = read_row(values)
                found[row.id] = row
        self._rows.offer(found, generation)
        return kept | found

    def ids_by_name(self, names: Iterable[str]) -> dict[str, int]:
        wanted = list(dict.fromkeys(names))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        cursor = self.db.fetchall(
            f"SELECT name, id FROM entries WHERE name IN ({marks}) ORDER BY kind", wanted
        )
        result: dict[str, int] = {}
        for name, entry_id in cursor:
            result.setdefault(str(name), int(entry_id))
        return result

    def texts(self, ids: Iterable[int]) -> dict[int, str]:
        """The searchable text of entries, lower-cased: for literal-hit checks."""
        generation = self._texts.generation
        kept, wanted = self._texts.lookup(ids)
        if not wanted:
            return kept
        marks = ",".join("?" * len(wanted))
        cursor = self.db.fetchall(
            f"SELECT rowid, name, description, body FROM fts WHERE rowid IN ({marks})", wanted
        )
        found = {int(r[0]): f"{r[1]}\n{r[2]}\n{r[3]}".casefold() for r in cursor}
        self._texts.offer(found, generation)
        return kept | found

    def upsert_many(self, docs: list[Document]) -> list[tuple[int, bool]]:
        """Several entries in one transaction (a first sync writes thousands); each then
        gets the stored vector of its text, if its text changed or it had none."""
        with self._writing() as conn:
            results = [upsert(conn, doc) for doc in docs]
        vectors = self.vectors
        if vectors is not None:
            for doc, (entry_id, changed) in zip(docs, results, strict=True):
                if changed or entry_id not in vectors:
                    self.attach_vector(entry_id, doc.kind, doc.text.embed_hash)
                else:
                    vectors.set_kind(entry_id, KIND_CODE[doc.kind])
        return results

    def delete(self, path: str) -> int | None:
        with self._writing() as conn:
            found = conn.execute("SELECT id FROM entries WHERE path = ?", (path,)).fetchone()
            if found is None:
                return None
            entry_id = int(found[0])
            conn.execute("DELETE FROM entries WHERE id = ?", (entry_id,))
            conn.execute("DELETE FROM fts WHERE rowid = ?", (entry_id,))
            conn.execute("DELETE FROM dates WHERE entry_id = ?", (entry_id,))
        if self.vectors is not None:
            self.vectors.remove(entry_id)
        return entry_id

    def forget_deleted(self) -> None:
        """Leave no copy of deleted rows' text in the index files (after a purge): merge
        the full-text segments (a deletion there is only a marker until a merge), drop the
        vectors no row uses, rewrite the file and empty the WAL."""
        self.drop_unused_vectors()
        with self.db.write() as conn:
            conn.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        self.db.compact()

    def drop_unused_vectors(self) -> int:
        """Delete the stored vectors no row's text uses (an edited or deleted text's, or
        another model's); how many. They were kept for ever: a probe's index grew from 7 to
        19 MB in ten minutes of edits, and a purged entry's vector stayed."""
        with self._attach_lock, self.db.write() as conn:
            model = ("OR model != ?", (self.model,)) if self.model is not None else ("", ())
            return conn.execute(
                "DELETE FROM vectors WHERE NOT EXISTS (SELECT 1 FROM entries"
                f" WHERE entries.embed_hash = vectors.embed_hash) {model[0]}",
                model[1],
            ).rowcount

    def invalidate(self, *, vectors: bool = False) -> None:
        """Forget what the index knows of each file, so the next full sync reads, parses and
        indexes every file again. Entry ids stay (loaded vectors keep pointing at the right
        rows); ``vectors`` also drops every stored vector, so every text is embedded again."""
        if self.db.removed:  # a rebuild into a deleted file would say done, and keep nothing
            raise IndexUnavailable(REMOVED)
        with self._writing() as conn:
            conn.execute("DELETE FROM fts")
            conn.execute("DELETE FROM dates")
            conn.execute("UPDATE entries SET file_hash = '', text_hash = ''")
            if vectors:
                conn.execute("DELETE FROM vectors")
        if vectors and self.vectors is not None:
            self.vectors = VectorTable(self.vectors.dim, self._scan_helper)

    def count_invalidated(self) -> int:
        """Entries :meth:`invalidate` marked that no sync has read again yet."""
        return self.db.count("SELECT COUNT(*) FROM entries WHERE file_hash = ''")

    # ------------------------------------------------------------------ time and sessions

    def dates_of(self, ids: Iterable[int]) -> dict[int, list[tuple[int, int]]]:
        """The day ranges each entry is about (its ``when``, the dates in its text)."""
        wanted = list(ids)
        found: dict[int, list[tuple[int, int]]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            cursor = self.db.fetchall(
                f"SELECT entry_id, start, end FROM dates WHERE entry_id IN ({marks})", chunk
            )
            for entry_id, first, last in cursor:
                found.setdefault(int(entry_id), []).append((int(first), int(last)))
        return found

    def ids_in_time(self, first: int, last: int, kinds: tuple[Kind, ...], limit: int) -> list[int]:
        """Entries about a day in ``first..last`` (ordinals), the narrowest dates first."""
        marks = ",".join("?" * len(kinds))
        cursor = self.db.fetchall(
            "SELECT DISTINCT dates.entry_id FROM dates JOIN entries ON entries.id = dates.entry_id"
            f" WHERE dates.start <= ? AND dates.end >= ? AND entries.kind IN ({marks})"
            " ORDER BY dates.end - dates.start LIMIT ?",
            (last, first, *[kind.value for kind in kinds], limit),
        )
        return [int(row[0]) for row in cursor]

    def neighbours(self, rows: Iterable[Row]) -> dict[int, tuple[int | None, int | None]]:
        """For entries of a session: the ids just before and just after each in it, in one
        statement per 500 (a seek each on ``entries_session``), kept until the next write."""
        generation = self._near.generation
        found, wanted = self._near.lookup(row.id for row in rows if row.session is not None)
        near = "(SELECT id FROM entries e WHERE e.session = r.session AND e.id {} r.id"
        read: dict[int, tuple[int | None, int | None]] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            cursor = self.db.fetchall(
                f"SELECT r.id, {near.format('<')} ORDER BY e.id DESC LIMIT 1),"
                f" {near.format('>')} ORDER BY e.id LIMIT 1)"
                f" FROM entries r WHERE r.id IN ({marks}) AND r.session IS NOT NULL",
                chunk,
            )
            read.update({int(i): (before, after) for i, before, after in cursor})
        self._near.offer(read, generation)
        return found | read

    # ------------------------------------------------------------------ keywords

    def keyword_search(
        self, terms: list[str], kinds: tuple[Kind, ...], limit: int
    ) -> list[tuple[int, float]]:
        """Best keyword matches: (entry id, relevance > 0), best first (BM25 over fields).

        Ranked first and filtered by kind after: joining every match to its row for the
        kind cost as much as the ranking (a seek each: 3.0 against 2.0 ms at 10k entries),
        and the kinds asked mostly hold nearly every entry. Where more than ``limit // 2``
        of the best ``limit × 1.5`` are of other kinds, the search joins instead, and does
        so first for those kinds until the next write."""
        if not terms:
            return []
        match = fts_query(terms)
        if kinds not in self._join_kinds:
            fetched = limit + limit // 2
            ranked = self._ranked(
                f"SELECT rowid, -bm25(fts, {self._weights_sql}) AS rank FROM fts"
                " WHERE fts MATCH ? ORDER BY rank DESC LIMIT ?",
                (match, fetched),
            )
            rows = self.rows_by_id(entry_id for entry_id, _rank in ranked)
            kept = [hit for hit in ranked if hit[0] in rows and rows[hit[0]].kind in kinds]
            if len(kept) >= limit or len(ranked) < fetched:
                return [hit for hit in kept[:limit] if hit[1] > 0]
            self._join_kinds.add(kinds)
        marks = ",".join("?" * len(kinds))
        ranked = self._ranked(
            f"SELECT fts.rowid, -bm25(fts, {self._weights_sql}) AS rank FROM fts"
            f" JOIN entries ON entries.id = fts.rowid"
            f" WHERE fts MATCH ? AND entries.kind IN ({marks})"
            f" ORDER BY rank DESC LIMIT ?",
            (match, *[kind.value for kind in kinds], limit),
        )
        return [hit for hit in ranked if hit[1] > 0]

    def _ranked(self, sql: str, params: tuple[object, ...]) -> list[tuple[int, float]]:
        try:
            cursor = self.db.fetchall(sql, params)
        except sqlite3.OperationalError as exc:  # a query FTS5 cannot parse: no match
            if not query_error(exc):
                raise unreadable(exc) from exc
            return []
        return [(int(entry_id), float(rank)) for entry_id, rank in cursor]

    # ------------------------------------------------------------------ vectors

    def gather(
        self,
        vector: Vector | None,
        ids: set[int],
        kinds: tuple[Kind, ...],
        pool: int,
        texts_of: set[int] | None,
        terms: list[str] | None = None,
        known: Collection[int] = (),
    ) -> Gathered:
        """Rows of ``ids``, of ``terms``' hits and of the nearest vectors, but for those
        ``known`` already; cosines; the texts of ``texts_of``."""
        keyword = None if terms is None else dict(self.keyword_search(terms, kinds, pool))
        ids = ids | set(keyword or ())
        texts_of = None if texts_of is None else texts_of | set(keyword or ())
        cosines: dict[int, float] = {}
        table = self.vectors
        if vector is not None and table is not None:
            cosines = dict(table.search(vector, [KIND_CODE[kind] for kind in kinds], pool))
            cosines.update(table.cosines(vector, [i for i in ids if i not in cosines]))
        rows = self.rows_by_id((ids | set(cosines)).difference(known))
        texts = self.texts(texts_of) if texts_of else {}
        return Gathered(rows, cosines, texts, keyword)

    def vectors_of(self, ids: Iterable[int]) -> dict[int, Vector]:
        return {} if self.vectors is None else self.vectors.vectors_of(ids)

    def vector_count(self) -> int:
        return 0 if self.vectors is None else len(self.vectors)

    def has_vectors(self) -> bool:
        return self.vector_count() > 0

    def use_model(self, model: str, dim: int) -> None:
        """Load every stored vector of ``model`` for the current entries into memory."""
        table = VectorTable(dim, self._scan_helper)
        cursor = self.db.fetchall(
            "SELECT entries.id, entries.kind, vectors.vec FROM entries"
            " JOIN vectors ON vectors.embed_hash = entries.embed_hash AND vectors.model = ?",
            (model,),
        )
        for entry_id, kind, blob in cursor:
            vector = np.frombuffer(blob, dtype=np.float32)
            if vector.shape == (dim,):
                table.put(int(entry_id), KIND_CODE[Kind(kind)], vector)
        self.model = model
        self.vectors = table

    def missing_vectors(self, limit: int) -> list[tuple[str, str]]:
        """(embed hash, text) of entries whose text has no vector for the current model."""
        if self.model is None:
            return []
        cursor = self.db.fetchall(
            "SELECT DISTINCT entries.embed_hash, entries.embed_text" + _MISSING + " LIMIT ?",
            (self.model, limit),
        )
        return [(str(h), str(t)) for h, t in cursor]

    def count_missing_vectors(self) -> int:
        if self.model is None:
            return 0
        return self.db.count("SELECT COUNT(DISTINCT entries.embed_hash)" + _MISSING, (self.model,))

    def store_vectors(self, items: list[tuple[str, Vector]]) -> None:
        """Persist vectors for text hashes and load them for every entry using those texts."""
        if self.model is None or self.vectors is None or not items:
            return
        model, table = self.model, self.vectors
        with self._attach_lock:
            self._store_vectors(model, table, items)

    def _store_vectors(
        self, model: str, table: VectorTable, items: list[tuple[str, Vector]]
    ) -> None:
        with self.db.write() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (embed_hash, model, vec) VALUES (?,?,?)",
                [
                    (embed_hash, model, vector.astype(np.float32).tobytes())
                    for embed_hash, vector in items
                ],
            )
        by_hash = dict(items)
        marks = ",".join("?" * len(by_hash))
        cursor = self.db.fetchall(
            f"SELECT id, kind, embed_hash FROM entries WHERE embed_hash IN ({marks})", list(by_hash)
        )
        for entry_id, kind, embed_hash in cursor:
            table.put(int(entry_id), KIND_CODE[Kind(kind)], by_hash[str(embed_hash)])

    def attach_vector(self, entry_id: int, kind: Kind, embed_hash: str) -> bool:
        """Give an entry the stored vector of its text, if there is one. True if attached."""
        model, table = self.model, self.vectors
        if model is None or table is None:
            return False
        with self._attach_lock:
            found = self.db.fetchone(
                "SELECT vec FROM vectors WHERE embed_hash = ? AND model = ?", (embed_hash, model)
            )
            if found is None:
                table.remove(entry_id)
                return False
            table.put(entry_id, KIND_CODE[kind], np.frombuffer(found[0], dtype=np.float32))
            return True

    # ------------------------------------------------------------------ state

    def set_state(self, key: str, value: str) -> None:
        with self.db.write() as conn:
            conn.execute("INSERT OR REPLACE INTO state (key, value) VALUES (?, ?)", (key, value))

    def get_state(self, key: str) -> str | None:
        row = self.db.fetchone("SELECT value FROM state WHERE key = ?", (key,))
        return None if row is None else str(row[0])

    def total(self) -> int:
        return self.db.count("SELECT COUNT(*) FROM entries")

    def counts(self) -> dict[str, int]:
        cursor = self.db.fetchall("SELECT kind, COUNT(*) FROM entries GROUP BY kind")
        return {str(kind): int(count) for kind, count in cursor}

    def stamp_sync(self, when: dt.datetime) -> None:
        self.set_state("last_sync", when.isoformat())
