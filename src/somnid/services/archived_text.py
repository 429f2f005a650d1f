"""A text coming into an archived entry's file (a sync conflict settled with the other
machine's version) keeps what archiving wrote there: when, why, and the live name."""

from __future__ import annotations

from somnid.memory.entry import Entry
from somnid.store.fields import ARCHIVE_KEYS, carry_keys


def as_archived(data: bytes, archived: Entry) -> bytes:
    """The entry file ``data`` with the archive keys of ``archived`` (the archived copy it
    replaces) set in it; ``data`` as it is when it does not parse."""
    keys = {key: archived.field(key) for key in ARCHIVE_KEYS}
    return carry_keys(data, {key: value for key, value in keys.items() if value is not None})
