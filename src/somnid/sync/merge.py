"""somnid's merge driver: one entry edited on two machines becomes one entry.

git runs it (``python -m somnid.sync.merge %O %A %B %P``, registered by
:mod:`somnid.sync.service`) for every entry file both sides changed: ``%O`` the common
ancestor, ``%A`` ours (the merged result is written back there), ``%B`` theirs, ``%P`` the
path. The rules (docs/memory-model.md, "Merging two machines' memory"):

- front-matter keys merge three-way: a key one side changed takes that side's value; a key
  both changed takes, for a list, the union (less what either side removed); for a mapping,
  the same rules key by key (a value written alone, ``tags: a``, against a list is a list
  of one); for ``created``, the earlier; for ``last_used``,
  ``last_decay``, ``updated`` and ``*_at``, the later; for ``stability``, the larger; for
  ``description``, ours, and theirs goes beside it as a conflict (as a body both changed
  on the same lines); for anything else (``score``), the value of the side used or
  decayed most recently (ours on a tie); for ``score`` and ``stability``, a finite number
  always beats a value that is none (``.nan``, ``high``), on either side;
- an entry new on both sides (no common ancestor) whose descriptions differ is two
  memories under one name: ours stays as it is, theirs goes beside it as a conflict;
- the body merges line by line with ``git merge-file``; a body both sides changed on the
  same lines cannot merge: the entry keeps ours, and theirs (the whole file) is noted in
  ``$SOMNID_MERGE_NOTES`` so the sync stores it beside the entry as a conflict (so for a
  description both sides rewrote). The result never holds conflict markers.

The result is written with somnid's front-matter writer (canonical bytes). Exit 0, or 1
when a side cannot be read at all, or when bodies (or descriptions) would not merge and
nobody asked for notes (a person's own ``git merge``: git then leaves the file unmerged
for them, ours in the working file, theirs as git's stage 3). Sync
itself merges in process with :func:`merge_entry` (a Python start a file was too slow).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from somnid.errors import BrokenFile
from somnid.store import frontmatter

DRIVER = "somnid"
"""The driver's name in ``.git/config`` (``merge.somnid.driver``) and the attributes."""
NOTES_ENV = "SOMNID_MERGE_NOTES"
"""A folder where the driver notes each file it could not merge (theirs, whole); without
it (a person's own ``git merge``), such a file is left to git as a conflict (exit 1)."""
EARLIER = frozenset({"created"})
LATER = frozenset({"last_used", "last_decay", "updated", "when_updated"})
LARGER = frozenset({"stability"})
NUMBERS = frozenset({"stability", "score"})
"""Keys decay and recall read as numbers: a number beats a value that is none (``.nan``,
``high``) whichever side it is on."""
RECENCY = ("updated", "last_used", "last_decay")
WRITTEN = frozenset({"description"})
"""Texts a person or an agent writes (an intention's text is its description): rewritten
differently on both sides, both are kept (a conflict). The keys somnid writes itself
(``archive_reason``, ``status``) take the side used last."""
_MISSING: Any = object()


@dataclass(frozen=True, slots=True)
class Merged:
    text: str
    theirs_kept_aside: bool
    """True when the bodies could not merge, or both sides rewrote a text (a description)
    differently: ``text`` has ours, theirs goes beside it."""


def merge_entry(base: str, ours: str, theirs: str) -> Merged:
    """Merge one entry file three ways (see the module's rules). BrokenFile when ours or
    theirs does not parse (the caller keeps ours and stores theirs aside)."""
    if ours == theirs:
        return Merged(ours, False)
    mine, other = frontmatter.parse(ours), frontmatter.parse(theirs)
    if not base.strip() and mine.meta.get("description") != other.meta.get("description"):
        # New on both sides under one name, saying different things: two memories (two
        # intentions given one id the same day), not one edited twice. A blend of the two
        # would be neither, and an intention's text is its description alone.
        return Merged(ours, True)
    try:
        old = frontmatter.parse(base)
    except BrokenFile:
        old = frontmatter.Document(frontmatter.new_meta({}), "")
    theirs_newer = _stamp(other.meta) > _stamp(mine.meta)
    clashes: list[str] = []
    meta = _merge_map(old.meta or {}, mine.meta, other.meta, theirs_newer, clashes)
    body, clean = _merge_body(old.body, mine.body, other.body)
    # Written as ours was written: its byte-order mark, line ends and indents.
    text = frontmatter.render(frontmatter.Document(meta, body, mine.bom, mine.crlf, mine.style))
    return Merged(text, not clean or bool(clashes))


def _stamp(meta: Any) -> str:
    """The latest of an entry's recency keys, as sortable text ('' when it has none)."""
    found = [_as_text(meta.get(key)) for key in RECENCY if meta.get(key) is not None]
    return max(found, default="")


def _as_text(value: Any) -> str:
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return str(value.isoformat())
    if isinstance(value, dt.date):
        return str(value.isoformat())
    return str(value)


def _merge_map(base: Any, ours: Any, theirs: Any, theirs_newer: bool, clashes: list[str]) -> Any:
    out = frontmatter.as_commented(ours)
    for key in [*ours.keys(), *(k for k in theirs if k not in ours)]:
        b, o, t = base.get(key, _MISSING), ours.get(key, _MISSING), theirs.get(key, _MISSING)
        value = _merge_value(key, b, o, t, theirs_newer, clashes)
        if value is _MISSING:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def _merge_value(key: Any, b: Any, o: Any, t: Any, theirs_newer: bool, clashes: list[str]) -> Any:
    if o == t:
        return o
    if o == b:
        return t
    if t == b:
        return o
    if o is _MISSING or t is _MISSING:  # one side changed it, the other removed it
        return t if o is _MISSING else o
    if isinstance(o, list) != isinstance(t, list) and _scalar(o) and _scalar(t):
        # "tags: a" on one side, "tags: [a, b]" on the other: one a list of one
        o, t = (o if isinstance(o, list) else [o]), (t if isinstance(t, list) else [t])
        b = b if isinstance(b, list) or b is _MISSING else [b]
    if isinstance(o, list) and isinstance(t, list):
        gone = [
            item for item in (b if isinstance(b, list) else []) if item not in o or item not in t
        ]
        kept = [item for item in o if item not in gone]
        return kept + [item for item in t if item not in kept and item not in gone]
    if isinstance(o, dict) and isinstance(t, dict):
        return _merge_map(b if isinstance(b, dict) else {}, o, t, theirs_newer, clashes)
    if key in EARLIER or key in LATER or str(key).endswith("_at"):
        try:
            later = _as_text(t) > _as_text(o)
        except TypeError:
            later = theirs_newer
        return (o if later else t) if key in EARLIER else (t if later else o)
    if key in NUMBERS and _number(o) != _number(t):
        return o if _number(o) else t
    if key in LARGER and _number(o) and _number(t):
        return max(o, t)
    if key in WRITTEN and isinstance(o, str) and isinstance(t, str):
        # A text both sides rewrote: which is later is not known (an edit moves no time
        # key), and the other would be lost unseen. Ours stays, theirs goes beside it as a
        # conflict, as for a body both changed on the same lines.
        clashes.append(str(key))
        return o
    return t if theirs_newer else o


def _number(value: Any) -> bool:
    """A finite number (never a bool, never NaN or infinity)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)  # an int of any size is finite


def _scalar(value: Any) -> bool:
    """A list, or a value that can stand as a list of one (not a map, not missing)."""
    return value is not _MISSING and value is not None and not isinstance(value, dict)


def _merge_body(base: str, ours: str, theirs: str) -> tuple[str, bool]:
    """(merged body, True) or (ours, False) when both sides changed the same lines."""
    if ours == theirs or theirs == base:
        return ours, True
    if ours == base:
        return theirs, True
    with tempfile.TemporaryDirectory(prefix="somnid-merge-") as folder:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(folder) / name
            path.write_text(text, "utf-8")
            paths.append(str(path))
        done = subprocess.run(
            ["git", "merge-file", "-p", "-q", *paths],
            capture_output=True,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    if done.returncode != 0:  # > 0: conflicting hunks; < 0: git failed
        return ours, False
    return done.stdout.decode("utf-8"), True


def _note(path: str, theirs: str) -> None:
    folder = os.environ.get(NOTES_ENV)
    if not folder:
        return
    note = Path(folder) / f"{uuid.uuid4().hex}.json"
    note.write_text(json.dumps({"path": path, "theirs": theirs}), "utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """``%O %A %B [%P]``: merge into ``%A``; 0 when it holds a clean result."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (3, 4):
        print("usage: somnid merge-driver BASE OURS THEIRS [PATH]", file=sys.stderr)
        return 2
    base_path, ours_path, theirs_path = (Path(arg) for arg in args[:3])
    where = args[3] if len(args) == 4 else ours_path.name
    try:
        base = base_path.read_text("utf-8") if base_path.is_file() else ""
        ours, theirs = ours_path.read_text("utf-8"), theirs_path.read_text("utf-8")
        merged = merge_entry(base, ours, theirs)
    except (OSError, UnicodeDecodeError, BrokenFile) as exc:
        print(f"somnid merge-driver: {where}: {exc}", file=sys.stderr)
        return 1
    ours_path.write_text(merged.text, "utf-8")
    if merged.theirs_kept_aside:
        if not os.environ.get(NOTES_ENV):
            return 1  # git marks it unmerged: theirs is in git's stage 3, for the person
        _note(where, theirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
