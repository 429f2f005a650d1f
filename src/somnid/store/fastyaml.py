"""A fast, read-only YAML reader for front-matter: libyaml through PyYAML, YAML 1.2 rules.

ruamel's round-trip loader keeps comments and formatting but costs about 1 ms a file; reading
10,000 files for the index took most of a start-up. This reader is ~20× faster and is used
wherever a file is only read. Writes still parse with ruamel, so nothing a person wrote is
lost. The resolvers follow YAML 1.2's core schema, as ruamel does (``yes`` stays a string,
``010`` is ten), and duplicate keys are refused, so both readers agree on what a file says.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class DuplicateKey(yaml.YAMLError):  # type: ignore[misc]
    pass


class Loader(_Base):  # type: ignore[misc]
    """SafeLoader with the YAML 1.2 core schema and no duplicate keys."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}  # only the resolvers below


def _resolver(tag: str, pattern: str, first: str) -> None:
    Loader.add_implicit_resolver(tag, re.compile(pattern, re.X), list(first))


_resolver("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF")
_resolver("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789")
_resolver(
    "tag:yaml.org,2002:float",
    r"""^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
    "-+0123456789.",
)
_resolver("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""])  # type: ignore[arg-type]
_resolver(
    "tag:yaml.org,2002:timestamp",
    r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
         (?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
         (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
    "0123456789",
)


def _int(loader: Any, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


def _mapping(loader: Any, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    result: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise DuplicateKey(f"unhashable key {key!r}") from None
        if key in result:
            raise DuplicateKey(f"duplicate key {key!r}")
        result[key] = loader.construct_object(value_node, deep=True)
    return result


def _timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    """A date or time; a day the calendar has not (``2023-02-30``, ``25:61``) stays the
    text it is, as a value somnid cannot use is read as missing, not as a broken file."""
    try:
        return _Base.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        return str(loader.construct_scalar(node))


Loader.add_constructor("tag:yaml.org,2002:int", _int)
Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)
Loader.add_constructor("tag:yaml.org,2002:map", _mapping)


def load(text: str) -> Any:
    return yaml.load(text, Loader=Loader)  # a SafeLoader: no arbitrary objects
