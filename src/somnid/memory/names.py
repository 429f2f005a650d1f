"""Entry names: what a person or a model proposes becomes a safe, readable slug.

A slug is one path component: Unicode letters, their marks and digits (Chinese stays
Chinese, Hindi keeps its vowel signs), ``-``, ``_`` and inner dots; spaces, punctuation and
other signs become ``-``. Anything that could leave the data dir or confuse a file system is
refused rather than repaired: separators, NUL and control characters, ``.``/``..``, names
reserved on Windows, and the folder names somnid itself uses. So is a pictographic symbol
(an emoji, ``©``): it would otherwise vanish from the name without a word, and kept in a
folder name it is a mess of joiners and variation selectors.

A name is at most :data:`MAX_NAME_CHARS` characters and :data:`MAX_NAME_BYTES` bytes of
UTF-8 (a folder name); the HTTP schema states the same. The archive may add its suffix
(``--2``) beyond them: a name at the limit can be archived a second time.
Names are unique without regard to case: the store refuses ``Deploy-Window`` next to
``deploy-window`` (a case-insensitive file system could not hold both).
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import unicodedata

from somnid.errors import InvalidName
from somnid.memory.text import has_surrogate

MAX_NAME_CHARS = 100
MAX_NAME_BYTES = 200
ARCHIVE_SUFFIX = "--"
"""An archived copy's name is the entry's, or (another copy having it) ``<name>--<n>``."""
_ARCHIVE_NUMBER = re.compile(rf"{ARCHIVE_SUFFIX}[0-9]{{1,9}}$")

# Folder names somnid uses inside the kind directories.
_RESERVED = {"archived", "session-log", "dream-log"}
_WINDOWS_DEVICES = {"con", "prn", "aux", "nul"} | {
    f"{p}{i}" for p in ("com", "lpt") for i in range(10)
}
_FORBIDDEN = re.compile(r"[/\\\x00-\x1f\x7f]")
_DASHES = re.compile(r"-{2,}")
_SYMBOLS = ("So", "Sk")  # pictographs, emoji and their skin-tone modifiers


def _selector(ch: str) -> bool:
    return "\ufe00" <= ch <= "\ufe0f" or "\U000e0100" <= ch <= "\U000e01ef"


def _slug_char(ch: str) -> bool:
    return ch in "._-" or ch.isalnum() or unicodedata.category(ch).startswith("M")


def _dashed(text: str) -> str:
    return "".join(ch if _slug_char(ch) else "-" for ch in text)


def slugify(raw: str) -> str:
    """Turn ``raw`` into a safe name, or raise :class:`InvalidName` saying why not."""
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidName("a name must be a non-empty string")
    if _FORBIDDEN.search(raw):
        raise InvalidName(f"name {raw[:60]!r} contains a path separator or a control character")
    if raw.strip() in (".", ".."):
        raise InvalidName(f"name {raw!r} is not allowed")
    if has_surrogate(raw):
        raise InvalidName("a name must be valid Unicode: it holds a lone surrogate")
    text = unicodedata.normalize("NFKC", raw)
    # Zero-width and other format characters and variation selectors are invisible and
    # make look-alike names.
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf" and not _selector(ch))
    symbols = "".join(dict.fromkeys(ch for ch in text if unicodedata.category(ch) in _SYMBOLS))
    if symbols:
        raise InvalidName(
            f"name {raw[:60]!r} holds {symbols[:10]}: a name cannot hold emoji or other "
            "pictographic symbols; say it in words"
        )
    text = _dashed(text.strip())
    text = _DASHES.sub("-", text).strip("-._")
    if not any(ch.isalnum() for ch in text):  # marks alone ("\u0301") show as nothing
        raise InvalidName(f"name {raw[:60]!r} has no usable characters")
    check_name(text)
    return text


def check_name(name: str) -> str:
    """Accept ``name`` only if it already is a safe slug; return it unchanged."""
    if has_surrogate(name):
        raise InvalidName("a name must be valid Unicode: it holds a lone surrogate")
    if not name or name in (".", "..") or _FORBIDDEN.search(name) or name.startswith("."):
        raise InvalidName(f"name {name[:60]!r} is not a safe name")
    own = _ARCHIVE_NUMBER.sub("", name) or name  # the limits leave the archive's number out
    if len(own) > MAX_NAME_CHARS:
        raise InvalidName(f"name is {len(own)} characters long; at most {MAX_NAME_CHARS}")
    if len(own.encode()) > MAX_NAME_BYTES:
        raise InvalidName(
            f"name takes {len(own.encode())} bytes of UTF-8; at most {MAX_NAME_BYTES}"
        )
    stem = name.split(".", 1)[0].lower()
    if name.lower() in _RESERVED or stem in _WINDOWS_DEVICES:
        raise InvalidName(f"name {name!r} is reserved")
    if not all(_slug_char(ch) for ch in name):
        raise InvalidName(f"name {name!r} contains characters a name may not have")
    return name


def is_name(name: str) -> bool:
    """Whether ``name`` is a safe name as it is (:func:`check_name` raises nothing)."""
    try:
        check_name(name)
    except InvalidName:
        return False
    return True


def name_for(raw: str) -> str:
    """The one name that stands for ``raw`` (a user id, a person's name): ``raw`` itself
    when it is a safe name, else its readable part and a digest of the whole
    (``team/alice`` → ``team-alice-<8 hex>``). Two ids never share a name unless they are
    one text in two Unicode forms (NFKC: ``Zoë`` composed or not) or differ only in spaces
    around them: a user ``Alice Smith`` is not the user ``Alice-Smith``, nor ``_bob`` the
    user ``bob``. A name is its own slug, so the store keeps it as it is. Raises nothing."""
    raw = raw.strip()
    text = unicodedata.normalize("NFKC", raw)
    with contextlib.suppress(InvalidName):
        if slugify(text) == text:
            return text
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    readable = "".join(
        " " if unicodedata.category(ch) in _SYMBOLS or unicodedata.category(ch)[0] == "C" else ch
        for ch in _FORBIDDEN.sub(" ", raw)
    )
    while len(readable) > MAX_NAME_CHARS - 9 or len(readable.encode()) > MAX_NAME_BYTES - 9:
        readable = readable[:-1]
    try:
        return slugify(f"{readable}-{digest}")
    except InvalidName:
        return digest


def former_name_for(raw: str) -> str | None:
    """What :func:`name_for` was before 2026-12-06 (the slug of ``raw``), where that
    differs: a profile kept under it is that user's when its ``user_id`` says so."""
    with contextlib.suppress(InvalidName):
        former = slugify(raw.strip())
        return former if former != name_for(raw) else None
    return None


def live_name(recorded: object, archived_name: str) -> str:
    """The name an archived entry had when live: recorded when archiving renamed it, else
    its archived name less the ``--<n>`` a rename adds ("release--v2" stays itself). A
    recorded name that is not a safe name (edited by hand) is not followed."""
    if isinstance(recorded, str) and recorded.strip():
        with contextlib.suppress(InvalidName):
            return check_name(recorded.strip())
    stem, sep, number = archived_name.rpartition(ARCHIVE_SUFFIX)
    return stem if sep and stem and number.isdigit() else archived_name


def folded(name: str) -> str:
    """What tells two names apart for a person: neither case nor Unicode form does."""
    return unicodedata.normalize("NFKC", name).casefold()
