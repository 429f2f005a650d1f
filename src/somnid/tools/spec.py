"""A tool's JSON schema and argument validator, made from its Python signature and docstring.

The docstring's text before ``Args:`` is the tool's description; each ``name: text`` line of
the ``Args:`` section (continued by indented lines) describes that parameter. Types map to
JSON Schema (str → string, int → integer, float → number, bool → boolean). A parameter
without a default is required; empty-string defaults are not advertised, so a model does
not learn to send ``""``. Arguments are validated by a pydantic model built from the same
signature: unknown arguments are refused and the failing field is named.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
)

from somnid.errors import InvalidArguments
from somnid.memory.text import MAX_QUERY_CHARS, has_surrogate

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARG_HEAD = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*:\s*(.*)$")
_SECTION = re.compile(r"^\s*(Args|Arguments|Returns|Raises|Yields|Examples?)\s*:\s*$")
_SKIPPED = {"self", "ctx"}
_MAX_CHARS = {"query": MAX_QUERY_CHARS}
"""Longest text a parameter takes: a query of 1 MB cost a search a minute of CPU."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    concurrent: bool
    model: type[BaseModel]

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        # Surrogates first: pydantic cannot measure such a text against a maximum length.
        issues = [
            {"field": field, "message": "not valid Unicode: it holds a lone surrogate"}
            for field in _surrogates(args)
        ]
        if not issues:
            try:
                return self.model.model_validate(args).model_dump()
            except ValidationError as exc:
                issues = [
                    {"field": ".".join(map(str, error["loc"])) or "args", "message": error["msg"]}
                    for error in exc.errors()
                ]
        fields = ", ".join(issue["field"] for issue in issues)
        raise InvalidArguments(f"invalid arguments for {self.name}: {fields}", errors=issues)

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def _surrogates(value: Any) -> list[str]:
    """Where ``value`` holds a lone surrogate (``"\\ud800"`` is valid JSON but no text: it
    could not be embedded, searched nor written). A walk, not a recursion: arguments nested
    hundreds deep ended in a RecursionError (500)."""
    found: list[str] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if has_surrogate(item):
                found.append(path or "args")
        elif isinstance(item, dict):
            for key, inner in item.items():
                where = f"{path}.{key}".lstrip(".")
                if has_surrogate(str(key)):
                    found.append(where)
                stack.append((inner, where))
        elif isinstance(item, list):
            stack.extend((inner, f"{path}.{i}") for i, inner in enumerate(item))
    return sorted(found)


def _docs(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(fn.__doc__ or "")
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in doc.splitlines():
        header = _SECTION.match(line)
        if header:
            section, current = header.group(1), None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments"):
            head = _ARG_HEAD.match(line)
            if head and not line.startswith((" " * 8, "\t\t")):
                current = head.group(1)
                params[current] = head.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    paragraphs = "\n".join(description).strip().split("\n\n")
    text = "\n\n".join(" ".join(part.split()) for part in paragraphs)
    return text or fn.__name__, params


_RANGE = re.compile(r"\((-?\d+)\s*[-–]\s*(-?\d+)\)\.?$")


def _bounds(doc: str) -> dict[str, int]:
    """The range a parameter's description ends with, ``How many (1-20).``: {ge, le}."""
    found = _RANGE.search(doc.strip())
    return {"ge": int(found[1]), "le": int(found[2])} if found else {}


def _clamped(low: int, high: int) -> Callable[[int], int]:
    return lambda value: min(high, max(low, value))


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("Input should be a valid integer, not a boolean")
    return value


def _json_type(annotation: Any) -> tuple[str, bool]:
    """(JSON type, optional?) of an annotation such as ``str``, ``int | None``."""
    args = typing.get_args(annotation)
    if args and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return _JSON_TYPES.get(inner[0], "string") if len(inner) == 1 else "string", True
    return _JSON_TYPES.get(annotation, "string"), False


def tool_spec(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    concurrent: bool = True,
    clamp: bool = False,
) -> ToolSpec:
    """The spec of ``fn``. A count's range (``(1-20)`` ending its description) is in the
    schema; a count out of it is refused, or with ``clamp`` (a dream's tools: a small model
    asking for 50 should not lose a round) taken to the nearest end."""
    name = name or fn.__name__
    description, param_docs = _docs(fn)
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        if param.name in _SKIPPED or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(param.name, str)
        json_type, optional = _json_type(annotation)
        prop: dict[str, Any] = {"type": json_type}
        if param.name in param_docs:
            prop["description"] = param_docs[param.name]
        limit = _MAX_CHARS.get(param.name) if json_type == "string" else None
        if limit is not None:
            prop["maxLength"] = limit
        bounds = _bounds(param_docs.get(param.name, "")) if json_type == "integer" else {}
        prop |= {"minimum": bounds["ge"], "maximum": bounds["le"]} if bounds else {}
        if json_type == "integer":  # true is no count (pydantic's lax mode read it as 1)
            annotation = Annotated[annotation, BeforeValidator(_no_bool)]
            if clamp and bounds:
                low, high = bounds.pop("ge"), bounds.pop("le")
                annotation = Annotated[annotation, AfterValidator(_clamped(low, high))]
        default = ... if param.default is inspect.Parameter.empty else param.default
        if default is ...:
            required.append(param.name)
        elif default not in (None, ""):
            prop["default"] = default
        ge, le = bounds.get("ge"), bounds.get("le")
        fields[param.name] = (annotation, Field(default, max_length=limit, ge=ge, le=le))
        if optional:
            prop["type"] = [json_type, "null"]
        properties[param.name] = prop
    model = create_model(
        f"{name}_args", __config__=ConfigDict(extra="forbid", strict=False), **fields
    )
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return ToolSpec(name, description, parameters, concurrent, model)
