"""The one exception tree of somnid. Each error has a stable ``code`` clients may rely on.

No HTTP here: ``somnid.api.errors`` maps each class to a status code in one place.

    SomnidError
    ├── InvalidInput          bad name, bad value, bad request content
    │   ├── InvalidName       a name that is unsafe or empty
    │   └── InvalidArguments  a tool's arguments do not fit its schema
    ├── NotFound              no such entry / route / kind
    ├── Conflict              the entry exists already, or the target is taken
    ├── PreconditionFailed    If-Match did not match the current version
    ├── BrokenFile            a file on disk could not be parsed (left alone, reported)
    ├── StorageError          the data dir refused a write (disk full, read-only)
    ├── DataDirLocked         another somnid holds the data dir
    └── Unavailable           a dependency is not ready (model, LLM, index)
        └── IndexUnavailable  the index's server (PostgreSQL) cannot be reached
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "BrokenFile",
    "Conflict",
    "DataDirLocked",
    "IndexUnavailable",
    "InvalidArguments",
    "InvalidInput",
    "InvalidName",
    "NotFound",
    "PreconditionFailed",
    "SomnidError",
    "StorageError",
    "Unavailable",
]


class SomnidError(Exception):
    """Base of every error somnid raises on purpose."""

    code = "somnid_error"

    def __init__(self, detail: str, *, code: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        if code is not None:
            self.code = code
        self.extra = extra


class InvalidInput(SomnidError):
    code = "invalid_input"


class InvalidName(InvalidInput):
    code = "invalid_name"


class InvalidArguments(InvalidInput):
    """A tool was called with arguments that do not fit its schema."""

    code = "invalid_arguments"


class NotFound(SomnidError):
    code = "not_found"


class FolderAway(NotFound):
    """An entry asked for while memory/ or skills/ is moved away: not known to be gone, so
    not a 404 (a client would read it as deleted) but a 503; somnid's own readers skip it
    as they skip an entry that is not there."""

    code = "folder_missing"


class Conflict(SomnidError):
    code = "conflict"


class BeingWritten(Conflict):
    """Upkeep (a use noted, a score decayed) left an entry alone: its file changed a moment
    ago, not by somnid, so a person may still be writing it in place. Or a write found the
    file saved anew each time it was about to replace it, and gave up (nothing written)."""

    code = "being_written"


class PreconditionFailed(SomnidError):
    code = "precondition_failed"


class BrokenFile(SomnidError):
    code = "broken_file"


class StorageError(SomnidError):
    code = "storage_error"
    where: Path | None = None
    """The file or folder a write failed on, when known (health looks there again)."""


class DataDirLocked(SomnidError):
    code = "data_dir_locked"


class Unavailable(SomnidError):
    code = "unavailable"


class IndexUnavailable(Unavailable):
    """The index's database server is unreachable. Writes still land in the files (they
    come first); the index catches up by itself once the server answers again."""

    code = "index_unavailable"
