"""Checks and messages of the settings: whether a host is an address or a name, and one
line for a value that could not be read, saying where it came from (the value of a key
that may hold a secret, such as ``index.dsn``, is not shown)."""

from __future__ import annotations

import contextlib
import difflib
import ipaddress
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from somnid.memory.scrub import is_secret_name

_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)\Z")


def is_host(value: str) -> bool:
    """An IP address (v4 or v6), or a host name whose labels DNS allows (IDNA for others)."""
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(value)
        return True
    try:
        ascii_name = value.encode("idna").decode("ascii")
    except UnicodeError:
        return False
    labels = ascii_name.rstrip(".").split(".")
    if len(ascii_name) > 253 or all(label.isdigit() for label in labels):
        return False  # `999.1.1.1`: read as an address, and none
    return all(_LABEL.match(label) for label in labels)


def as_given(annotation: Any, value: object) -> object:
    """``value``, unless pydantic would read it as something else than it says:
    - true or false for a number, read as 1 and 0 (``port = true`` bound port 1);
    - an empty folder (``SOMNID_DATA_DIR=`` from an unset variable), read as the folder
      somnid happens to start in: its files re-moded, its git repo taken over."""
    kinds = get_args(annotation) or (annotation,)
    if isinstance(value, bool) and bool not in kinds and (int in kinds or float in kinds):
        raise ValueError(f"a number is wanted here, not {str(value).lower()}")
    if Path in kinds and isinstance(value, str) and not value.strip():
        raise ValueError("empty: name a folder (or leave it out for the default)")
    return value


def check_origin(value: str) -> str:
    """``value`` if it is an origin as a browser sends it (a scheme, a host, no path)."""
    scheme, sep, rest = value.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest.rstrip("/"):
        raise ValueError(f"{value!r} is not an origin like http://localhost:3000")
    return value


def misnamed_variable(fields: dict[str, FieldInfo]) -> str | None:
    """A ``SOMNID_*`` variable that reads as a setting misspelled, or None: a section that
    is none (``SOMNID_DREAMS__IDLE_MS``, silently ignored), or a section's key joined with
    one underscore (``SOMNID_DREAM_IDLE_MS``). ``fields``: the settings' top-level keys.
    Other unknown top-level names are left alone: tools around somnid use the prefix for
    their own variables."""
    sections = {
        name: set(field.annotation.model_fields)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        else None
        for name, field in fields.items()
    }
    for variable in sorted(os.environ):
        if not variable.startswith("SOMNID_"):
            continue
        head, nested, _ = variable.removeprefix("SOMNID_").lower().partition("__")
        if head in sections:
            continue
        if nested:
            return (
                f"{variable}: no section of the settings is named {head!r}{_near(head, sections)}"
            )
        for section, keys in sections.items():
            key = head.removeprefix(f"{section}_")
            if keys and key != head and key in keys:
                return (
                    f"{variable} names no setting: a section's key is joined with two "
                    f"underscores, SOMNID_{section.upper()}__{key.upper()}"
                )
    return None


_ORIGINAL = {
    "SOMNI_DATA_DIR": "SOMNID_DATA_DIR",
    "SOMNI_EMBED_PROVIDER": "SOMNID_EMBED__PROVIDER",
    "SOMNI_EMBED_MODEL_PATH": "SOMNID_EMBED__MODEL_DIR",
    "SOMNI_EMBED_BASE_URL": "SOMNID_EMBED__BASE_URL",
    "SOMNI_EMBED_MODEL": "SOMNID_EMBED__MODEL",
    "SOMNI_EMBED_DIM": "SOMNID_EMBED__DIM",
    "SOMNI_EMBED_THREADS": "SOMNID_EMBED__THREADS",
    "SOMNI_LOG_LEVEL": "SOMNID_LOG_LEVEL",
}


def original_variables() -> str | None:
    """The original sidecar's variables set here (``SOMNI_*``), which somnid does not read,
    with what it reads instead; None when there are none. A migrating user's
    ``SOMNI_EMBED_MODEL_PATH`` was ignored without a word."""
    found = sorted(name for name in os.environ if name.startswith("SOMNI_"))
    if not found:
        return None
    said = ", ".join(
        f"{name} (somnid's is {_ORIGINAL[name]})" if name in _ORIGINAL else name for name in found
    )
    return f"the original sidecar's variables are not read: {said}; see docs/configuration.md"


def _near(name: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.7)
    return f" (did you mean SOMNID_{close[0].upper()}__…?)" if close else ""


def toml_error(path: Path, exc: Exception) -> str:
    """One line for a file TOML cannot read; a byte-order mark (Notepad's UTF-8) named, where
    TOML said only "Invalid statement (at line 1, column 1)"."""
    with open(path, "rb") as handle:
        if handle.read(3) == b"\xef\xbb\xbf":
            return f"{path}: it begins with a byte-order mark: save it as UTF-8 without one"
    return f"{path}: {exc}"


def environment_error(exc: SettingsError) -> str:
    """A value in the environment that could not be read: which variable, and how a list
    or a section is written there."""
    found = re.search(r'field "([a-z_]+)"', str(exc))
    name = f"SOMNID_{found.group(1).upper()}" if found else "a SOMNID_* variable"
    return (
        f"{name} cannot be read: a list or a section in the environment is JSON"
        f' ({name}=\'["a", "b"]\')'
    )


def explain(
    error: ValidationError, path: Path | None, document: dict[str, Any], overrides: dict[str, Any]
) -> str:
    """One line for a bad setting: where its value came from (the environment variable, the
    file and its key, or the command line), the value, and what is wrong with it."""
    said = []
    for problem in error.errors():
        keys = [str(part) for part in problem["loc"]]
        dotted = ".".join(keys)
        variable = "SOMNID_" + "__".join(keys).upper()
        found: Any = document
        for key in keys:
            found = found.get(key) if isinstance(found, dict) else None
        hidden = bool(keys) and (keys[-1] == "dsn" or is_secret_name(keys[-1], in_query=False))
        if keys and keys[0] in overrides:  # the command line wins over the environment
            where = f"{dotted} = {_shown(overrides[keys[0]], hidden)} (command line)"
        elif variable in os.environ:  # a section's JSON may hold a secret deeper down
            given = os.environ[variable]
            where = f"{variable}={_shown(given, hidden or _holds_secret(given))}"
        elif section := _section_variable(keys):  # SOMNID_RECALL='{"candidates": 1}'
            where = f"{dotted} = {_shown(problem.get('input'), hidden)} (in {section})"
        elif path is not None and found is not None and not isinstance(found, dict):
            where = f"{path}: {dotted} = {_shown(found, hidden)}"  # a table: its error says
        else:
            where = f"{path}: {dotted}" if path is not None else dotted
        message = problem["msg"].removeprefix("Value error, ")
        said.append(f"{where}: {message}")
    return "; ".join(said)


def _section_variable(keys: list[str]) -> str | None:
    """The variable that gave a section as JSON holding the key ``keys`` names, or None
    (pydantic merges such a section with the file's: a key the JSON lacks is the file's)."""
    for end in range(len(keys) - 1, 0, -1):
        variable = "SOMNID_" + "__".join(keys[:end]).upper()
        if variable not in os.environ:
            continue
        try:
            found: Any = json.loads(os.environ[variable])
        except ValueError:
            return None
        for key in keys[end:]:
            if not isinstance(found, dict) or key not in found:
                return None
            found = found[key]
        return variable
    return None


def _holds_secret(given: str) -> bool:
    """Whether a variable's value is JSON with a DSN or a secret's key somewhere in it."""
    try:
        found: Any = json.loads(given)
    except ValueError:
        return False
    stack = [found]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "dsn" or is_secret_name(str(key), in_query=False):
                    return True
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _shown(value: Any, hidden: bool) -> str:
    return "(not shown)" if hidden else repr(value)
