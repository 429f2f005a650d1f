"""Which machine's merge set a conflict file aside: the first commit that added it.

A later merge adds it too (against its first parent), on either machine, so the newest
commit adding it named the wrong machine; and an archive or a restore moves it with its
entry (``kites`` to ``archived/kites--2`` and back) in a commit that adds it anew. The
places it may have been are named one by one (a log of the whole folder took 9 s at
20,000 commits), and only the commits after the one its name holds are read (the whole
history took a second a conflict). Each path named costs a scan of its folder's tree in
every commit read: the caller keeps the answer, which never changes for a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from somnid.history.git import Git
from somnid.memory.kinds import Kind
from somnid.store.layout import Layout
from somnid.sync.merging import MERGED_ON

_COMMIT_ID = re.compile("[0-9a-f]{12}")
_MERGED_ON = re.compile("^" + re.escape(MERGED_ON) + r"([^\s:]+)")
_COPY = re.compile(r"--\d+$")  # an archived copy's folder: kites--2
_COPIES = 2  # archived copies of one name looked for beyond those on disk (each path read
# costs a scan of its folder's tree in every commit of the range)


def merged_on(git: Git, places: list[str], named: str) -> str | None:
    """The machine whose merge set the conflict file aside, None when no merge's subject
    names one. ``places``: where the file is and may have been (relative to the data
    dir); ``named``: what its name holds after the conflict mark (the commit it came
    from)."""
    bound: list[str] = []
    if _COMMIT_ID.fullmatch(named[:12]):
        since = git.call("rev-parse", "--verify", "-q", f"{named[:12]}^{{commit}}")
        if since.returncode == 0:
            bound = [f"{since.stdout.decode().strip()}..HEAD"]
    said = git.call("log", "-m", "--diff-filter=A", "--format=%s", *bound, "--", *places)
    added = said.stdout.decode("utf-8", "replace").splitlines()
    found = _MERGED_ON.search(added[-1]) if added else None
    return found[1] if found else None


def places(layout: Layout, path: Path, what: tuple[Kind, str, bool] | None) -> list[str]:
    """``path`` (a conflict file beside its entry's file, whose kind, name and archived
    state are ``what``), and where it was if its entry was archived or restored since: the
    live folder of its name, the archived one and its copies (``kites--2``) of that kind."""
    here = str(layout.relative(path))
    if what is None or not what[0].archivable:
        return [here]
    kind, name, _archived = what
    base = _COPY.sub("", name) or name
    archive = layout.archive_dir(kind)
    copies = {f"{base}--{n}" for n in range(2, _COPIES + 2)}
    if archive.is_dir():
        copies |= {found.name for found in archive.glob(f"{base}--*") if _COPY.search(found.name)}
    folders = [layout.entry_folder(kind, base), archive / base, *(archive / c for c in copies)]
    found = {str(layout.relative(folder / path.name)) for folder in folders}
    return [here, *sorted(found - {here})]
