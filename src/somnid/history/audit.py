"""The audit log: one JSON line per irreversible act (a purge), in ``<data>/audit.log`` (0600).

Appended durably (fsync) before the act is acknowledged; never rewritten, never in history.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from somnid.store.atomic import append_durably, storage_error

AUDIT_FILE = "audit.log"


def audit(root: Path, record: dict[str, Any]) -> None:
    path = root / AUDIT_FILE
    line = json.dumps(record, ensure_ascii=False, default=str, sort_keys=True) + "\n"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise storage_error(exc, path) from exc
    try:
        os.fchmod(fd, 0o600)
        append_durably(fd, line.encode("utf-8"), os.fstat(fd).st_size, path)
    finally:
        os.close(fd)
