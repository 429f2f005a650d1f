"""Markdown with a YAML front-matter block, read and written without losing anything.

ruamel.yaml in round-trip mode keeps unknown keys, their order, comments, quoting styles,
dates and number-looking strings such as ``12-34`` exactly as a person wrote them.
A block that cannot be trusted (bad YAML, duplicate keys, not a mapping, aliases that
expand too far) raises :class:`BrokenFile`; the caller then leaves the file alone.
"""

from __future__ import annotations

import io
import itertools
import re
from dataclasses import dataclass, replace
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import YAMLError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from somnid.errors import BrokenFile
from somnid.store import fastyaml

FENCE = "---"
MAX_FRONT_MATTER_CHARS = 64 * 1024
MAX_NODES = 5000


@dataclass(frozen=True, slots=True)
class Style:
    """How a person laid out their front matter, kept when somnid writes the file back:
    re-indenting every nested key and adding a blank line turned one changed value into a
    diff of the whole block, in a repository the person versions."""

    mapping: int = 2
    """Spaces a nested mapping is indented by."""
    offset: int = 0
    """Spaces before a block sequence's dash, past its key's column (``tags:\n  - a``: 2)."""
    blank_line: bool = True
    """A blank line between the closing fence and the body."""
    comments: str = ""
    """A front-matter of comments alone (the YAML reader keeps none of them): written back
    first, as it was (a probe: decay's first key took the person's notes' place)."""


@dataclass(slots=True)
class Document:
    meta: Any  # a CommentedMap when parsed for round trips, else a plain dict
    body: str
    bom: bool = False
    """The file began with a byte-order mark: written back with one."""
    crlf: bool = False
    """The file's lines end in CRLF (as an editor on Windows writes them): written back so,
    every line, rather than turning each line of a person's file into a change."""
    style: Style = Style()


def _yaml(style: Style = Style()) -> YAML:
    yaml = YAML(typ="rt")
    yaml.indent(mapping=style.mapping, sequence=style.offset + 2, offset=style.offset)
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.allow_duplicate_keys = False
    # Equal scalars (one timestamp written to three keys) must not become &anchors/*aliases:
    # a person reading the file should see each value where it belongs. A scalar a person
    # anchored (``&d hello`` … ``*d``) keeps its alias: written out twice, its anchor would
    # be defined twice, which no reader takes.
    collections_only = yaml.representer.ignore_aliases
    yaml.representer.ignore_aliases = lambda data: (
        (not isinstance(data, dict | list) and not _anchored(data)) or collections_only(data)
    )
    yaml.constructor.add_constructor("tag:yaml.org,2002:timestamp", _rt_timestamp)
    return yaml


def _rt_timestamp(constructor: Any, node: Any) -> Any:
    """As the fast reader: a date the calendar has not stays its text (written back as
    it was, quoted: a person's value is kept, never made a broken file)."""
    try:
        return RoundTripConstructor.construct_yaml_timestamp(constructor, node)
    except (ValueError, OverflowError):
        return constructor.construct_scalar(node)


def _anchored(value: Any) -> bool:
    anchor = getattr(value, "anchor", None)
    return getattr(anchor, "value", None) is not None


def parse(text: str, *, round_trip: bool = True) -> Document:
    """Split ``text`` into front-matter and body.

    A file that does not start with ``---`` has no front-matter: all of it is body.
    The blank line conventionally written after the closing fence is not part of the body.
    ``round_trip=False`` reads the front-matter with the fast reader into a plain dict:
    for reading only, never for a document that will be written back.
    """
    bom = text.startswith("\ufeff")
    if bom:
        text = text[1:]
    lines = text.splitlines(keepends=True)
    crlf = bool(lines) and lines[0].endswith("\r\n")
    if not lines or lines[0].strip() != FENCE:
        return Document(CommentedMap(), text, bom, crlf)
    if lines[0].rstrip() != FENCE:
        raise BrokenFile("front-matter's opening '---' is indented")
    for index in range(1, len(lines)):
        # Only a fence at the line's start closes it: an indented '---' is a line of a
        # block value (a probe: it closed the front-matter, and the next write moved the
        # rest of the person's value into the body for good).
        if lines[index].rstrip() == FENCE:
            break
    else:
        raise BrokenFile("front-matter is opened with '---' but never closed")
    block = "".join(lines[1:index])
    if len(block) > MAX_FRONT_MATTER_CHARS:
        raise BrokenFile(f"front-matter is larger than {MAX_FRONT_MATTER_CHARS} characters")
    try:
        if not block.strip():
            meta = CommentedMap()
        elif round_trip:
            # The fast reader first: it refuses what readers refuse (deep nesting, bombs) in
            # milliseconds, where ruamel took 45 s over a 10 kB nested flow (each write to
            # such a file, refused in the end, held a worker that long).
            fastyaml.load(block)
            meta = _yaml().load(block)
        else:
            meta = fastyaml.load(block)
            if "\t" in block:  # a tab the fast reader takes and the writer's refuses (a
                _yaml().load(block)  # probe: read fine, every write 409): broken for both
    except (YAMLError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BrokenFile(f"front-matter is not valid YAML: {reason}") from exc
    except RecursionError as exc:
        raise BrokenFile("front-matter is nested too deeply") from exc
    except (ValueError, IndexError, TypeError, AttributeError) as exc:
        # ruamel's constructors trip over some odd scalars ("-_", "._") with plain Python
        # errors; to us that is just YAML we cannot read.
        raise BrokenFile(f"front-matter could not be read: {type(exc).__name__}") from exc
    comments = ""
    if meta is None:
        meta = CommentedMap()
        if round_trip:
            comments = "".join(ln if ln.endswith("\n") else ln + "\n" for ln in lines[1:index])
    if not isinstance(meta, dict):
        raise BrokenFile("front-matter is not a mapping of keys to values")
    _check_size(meta)
    for key in meta:
        if not isinstance(key, str):
            raise BrokenFile(f"front-matter key {key!r} is not a string")
    if round_trip and block.strip():
        _check_readable(block)
    body = "".join(lines[index + 1 :])
    blank = body.startswith(("\r\n", "\n"))
    if body.startswith("\r\n"):
        body = body[2:]
    elif body.startswith("\n"):
        body = body[1:]
    if crlf:  # read as every other file reads (a body written back reads as sent); the
        body = body.replace("\r\n", "\n")  # file's line ends come back at render
    style = _style(block, blank=blank or not body)
    if comments.strip():
        style = replace(style, comments=comments.replace("\r\n", "\n"))
    return Document(meta, body, bom, crlf, style)


_NESTS = re.compile(r"^( *)(?:- +)?[^\s#][^#]*:$")
"""A key whose value is the block below it (``links:``, ``- name:``)."""
_LITERAL = re.compile(r":\s+[|>][-+0-9]*\s*(#.*)?$")
"""A key whose value is a literal or folded block (``note: |``, ``text: >-``)."""


def _style(block: str, *, blank: bool) -> Style:
    """The indents of the first nested mapping and block sequence in ``block``. A guess
    that is off only changes how far somnid indents: the YAML reads the same."""
    mapping = offset = None
    lines: list[str] = []
    within: int | None = None  # the column of the key whose literal block (``|``, ``>``) runs
    for line in block.splitlines():
        line = line.rstrip()
        column = len(line) - len(line.lstrip(" "))
        if not line.strip() or (within is not None and column > within):
            continue  # a literal's lines say nothing of the mapping's indents
        within = column if _LITERAL.search(line) else None
        if not line.lstrip().startswith("#"):
            lines.append(line)
    for parent, child in itertools.pairwise(lines):
        opens = _NESTS.match(parent)
        if opens is None:
            continue
        column = len(parent) - len(parent.lstrip(" "))
        if parent[column:].startswith("-"):  # "- key:": the key sits after the dash
            column = len(parent) - len(parent[column + 1 :].lstrip(" "))
        depth = len(child) - len(child.lstrip(" "))
        if child.lstrip(" ").startswith("- ") or child.strip() == "-":
            if offset is None and 0 <= depth - column <= 8:
                offset = depth - column
        elif mapping is None and 1 <= depth - column <= 8:
            mapping = depth - column
        if mapping is not None and offset is not None:
            break
    return Style(mapping or 2, offset or 0, blank)


def _check_size(meta: Any) -> None:
    """Refuse alias bombs: count nodes as a reader expanding every alias would."""
    budget = [MAX_NODES]

    def visit(node: Any, depth: int) -> None:
        budget[0] -= 1
        if budget[0] < 0 or depth > 50:
            raise BrokenFile("front-matter is too large or nested too deeply once expanded")
        if isinstance(node, dict):
            for value in node.values():
                visit(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                visit(value, depth + 1)

    visit(meta, 0)


def _check_readable(block: str) -> None:
    """ruamel keeps some things the fast reader refuses (a ``!!python`` tag): what cannot
    be read is broken for the writer too, and is left alone rather than rewritten."""
    try:
        fastyaml.load(block)
    except yaml.YAMLError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BrokenFile(f"front-matter is not valid YAML: {reason}") from exc


def render(doc: Document) -> str:
    """Write ``doc`` back; an empty front-matter still gets its fences. The file's
    byte-order mark and CRLF line ends, when it had them, are kept."""
    out = io.StringIO()
    out.write(FENCE + "\n")
    out.write(doc.style.comments)
    if doc.meta:
        out.write(_dumped(_breaks_escaped(doc.meta), doc.style))
    out.write(FENCE + ("\n\n" if doc.style.blank_line else "\n"))
    body = doc.body.lstrip("\n")
    out.write(body)
    if body and not body.endswith("\n"):
        out.write("\n")
    text = out.getvalue()
    if doc.crlf:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    return "\ufeff" + text if doc.bom else text


_PLAIN = Style()


def _dumped(meta: Any, style: Style) -> str:
    """``meta`` as YAML in the person's indents, when it reads the same as in the default
    ones: ruamel keeps a block scalar's indentation indicator (``|2``) while it indents the
    text by the mapping's indent, and each write then added two spaces to every line."""
    out = io.StringIO()
    _yaml(style).dump(meta, out)
    if (style.mapping, style.offset) == (_PLAIN.mapping, _PLAIN.offset):
        return out.getvalue()
    plain = io.StringIO()
    _yaml().dump(meta, plain)
    try:
        same = fastyaml.load(out.getvalue()) == fastyaml.load(plain.getvalue())
    except yaml.YAMLError:
        same = False
    return out.getvalue() if same else plain.getvalue()


def _breaks_escaped(value: Any) -> Any:
    """``value`` with each string holding a NEL (U+0085) double-quoted, where it is
    written ``\\N``: quoted otherwise, the emitter wrote it raw, and YAML reads a raw NEL as
    a line break (``a\\x85b`` came back ``a b``). In place: the style is all that changes."""
    if isinstance(value, str):
        return DoubleQuotedScalarString(value) if "\x85" in value else value
    if isinstance(value, dict):
        for key, item in value.items():
            escaped = _breaks_escaped(item)
            if escaped is not item:
                value[key] = escaped
    elif isinstance(value, list):
        for i, item in enumerate(value):
            escaped = _breaks_escaped(item)
            if escaped is not item:
                value[i] = escaped
    return value


def as_commented(meta: Any) -> CommentedMap:
    """The mapping itself when it came from :func:`parse`, else a copy in a CommentedMap."""
    return meta if isinstance(meta, CommentedMap) else new_meta(dict(meta))


def new_meta(items: dict[str, Any]) -> CommentedMap:
    meta = CommentedMap()
    for key, value in items.items():
        meta[key] = value
    return meta
