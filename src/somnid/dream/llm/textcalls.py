"""Tool calls written as JSON in a message's text, and tool-call arguments parsed for the loop.

Small local models (served by llama.cpp, Ollama, vLLM) often write their tool call into
``content`` and leave ``tool_calls`` empty. :func:`recognise_text_tool_calls` finds such
calls and returns them in the OpenAI shape, so the loop can run them as if they had come
in ``tool_calls``. Where it looks, in this order (the first that holds JSON wins):

* ``<tool_call>…</tool_call>`` tags (Qwen / Hermes; a missing last closing tag is forgiven),
* fenced blocks: three backticks, optionally tagged ``json``,
* the whole content (after a ``[TOOL_CALLS]`` or ``<|python_tag|>`` marker, if any),
* else, inside prose: JSON objects or lists, and calls written ``tool_name({...})`` (or
  ``tool_name()``) with the name of a listed tool (code blocks in another language are
  skipped: a code sample is not a call).

Each JSON value may be one call or a list of them, in any of these shapes:
``{"name", "arguments" | "parameters"}``, ``{"function": {"name", "arguments"}}``,
``{"tool", "args"}``, or ``{"tool_calls": [...]}``. A call counts only when its name is in the
tool list and its arguments fit that tool's JSON-schema ``parameters`` (required keys present,
no unknown keys when ``additionalProperties`` is false, primitive types and enums right), so
prose, or a JSON object that merely looks like data, is never run.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from somnid.dream.llm import answer_json

__all__ = [
    "TextCalls",
    "closest_tool",
    "describe_closest",
    "parse_arguments",
    "recognise_text_tool_calls",
    "scan_text_tool_calls",
]

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_FENCED = re.compile(r"```[ \t]*([A-Za-z_]*)[ \t]*\n(.*?)```", re.DOTALL)
_FENCE_LANGS = frozenset({"", "json", "tool_call", "tool", "function"})
_ANY_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_CALL_OPEN = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\s*\(\s*")
_MARKERS = ("[TOOL_CALLS]", "<|python_tag|>")
_NAME_KEYS = ("name", "tool", "tool_name")
_ARG_KEYS = ("arguments", "args", "parameters", "input")
_EXTRA_KEYS = frozenset({"id", "type", "call_id"})
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "number": (int, float),
    "integer": (int,),
}


@dataclass
class TextCalls:
    """What a scan found: the calls that may run, and why other would-be calls may not."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def recognise_text_tool_calls(
    message: Mapping[str, Any], tools: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """OpenAI-shaped tool calls (ids ``text-1``, ``text-2``, ...) found in the message's text,
    or [] when it has ``tool_calls`` already or its text holds no valid call."""
    return scan_text_tool_calls(message, tools).calls


def scan_text_tool_calls(message: Mapping[str, Any], tools: list[dict[str, Any]]) -> TextCalls:
    """Like :func:`recognise_text_tool_calls`, and also says what was rejected and why
    (unknown tool, arguments that do not fit), for a loop that wants to tell the model."""
    found = TextCalls()
    content = message.get("content")
    if message.get("tool_calls") or not isinstance(content, str):
        return found
    try:
        return _scan(content, _schemas(tools), found)
    except (RecursionError, ValueError):  # nested past the stack, a number of 4,300 digits
        problem = "the text holds JSON nested too deep or a number too long to read"
        return TextCalls([], [*found.problems, problem])


def _scan(content: str, schemas: dict[str, Any], found: TextCalls) -> TextCalls:
    for value in _json_values_in(content, schemas):
        for name, args, problem in _calls_in(value):
            if problem is None:
                problem = _check(name, args, schemas)
            if problem is not None:
                found.problems.append(problem)
                continue
            found.calls.append(
                {
                    "id": f"text-{len(found.calls) + 1}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)},
                }
            )
    return found


def parse_arguments(
    raw: str | Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, str | None]:
    """A tool call's arguments as a dict, or (None, an error message the model can act on).

    Empty means no arguments. Forgiven: a JSON object inside a code fence, and a JSON string
    holding the object (double-encoded)."""
    if raw is None:
        return {}, None
    if isinstance(raw, Mapping):
        return answer_json.cleaned(dict(raw)), None
    if not isinstance(raw, str):
        return None, f"arguments must be a JSON object, got {type(raw).__name__}"
    text = _unfence(raw)
    if not text:
        return {}, None
    try:
        value = answer_json.loads(text)
    except answer_json.BadJson as exc:  # the model is told why
        return None, f"arguments are not valid JSON: {exc}"
    if isinstance(value, str):  # double-encoded: a JSON string holding the object
        try:
            value = answer_json.loads(value)
        except answer_json.BadJson as exc:
            if not exc.syntax:  # else a plain string: refused below as no object
                return None, f"arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object, got {_json_kind(value)}"
    return value, None


def closest_tool(name: str, tools: list[dict[str, Any]]) -> tuple[str, Any] | None:
    """The listed tool whose name is nearest to ``name`` (for an unknown one), and its
    parameters schema; None when there are no tools."""
    return _closest(name, _schemas(tools))


def describe_closest(name: str, tools: list[dict[str, Any]]) -> str:
    """What to tell a model that called ``name``, which is no tool: the closest tool's
    name and the JSON schema of its arguments."""
    return _describe(name, _schemas(tools))


def _closest(name: str, schemas: dict[str, Any]) -> tuple[str, Any] | None:
    if not schemas:
        return None
    wanted = name.strip().lower()

    def nearness(known: str) -> tuple[float, int]:
        return difflib.SequenceMatcher(None, wanted, known.lower()).ratio(), -len(known)

    best = max(schemas, key=nearness)
    return best, schemas[best]


def _describe(name: str, schemas: dict[str, Any]) -> str:
    closest = _closest(name, schemas)
    if closest is None:
        return "there are no tools"
    known, schema = closest
    shown = json.dumps(schema if schema is not None else {}, ensure_ascii=False)
    return f"the closest tool is {known}, whose arguments have this JSON schema: {shown}"


def _json_values_in(content: str, schemas: dict[str, Any]) -> list[Any]:
    tagged = [m.group(1) for m in _TAGGED.finditer(content)]
    if tagged:
        return [v for block in tagged for v in _json_values(_unfence(block))]
    fenced = [m.group(2) for m in _FENCED.finditer(content) if m.group(1).lower() in _FENCE_LANGS]
    if fenced:
        return [v for block in fenced for v in _json_values(block)]
    text = content.strip()
    for marker in _MARKERS:
        text = text.removeprefix(marker).strip()
    whole = _json_values(text)
    if whole or not text:
        return whole
    return _embedded_values(_ANY_FENCE.sub(" ", text), schemas)


def _embedded_values(text: str, schemas: dict[str, Any]) -> list[Any]:
    """JSON values inside prose, and ``tool_name({...})`` calls of a listed tool, left to
    right; a value is taken whole (its inner objects are not looked at again)."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position, end = 0, len(text)
    while position < end:
        opened = _CALL_OPEN.match(text, position)
        if opened is not None and opened.group(1) in schemas:
            call = _call_syntax(text, opened, decoder)
            if call is not None:
                value, position = call
                values.append(value)
                continue
        if text[position] in "{[":
            try:
                value, after = decoder.raw_decode(text, position)
            except json.JSONDecodeError:
                pass
            else:
                values.append(value)
                position = after
                continue
        position += 1
    return values


def _call_syntax(
    text: str, opened: re.Match[str], decoder: json.JSONDecoder
) -> tuple[dict[str, Any], int] | None:
    """``name({...})`` or ``name()`` at ``opened``: the call as ``{name, arguments}`` and
    where it ends; None when it is not one."""
    position = opened.end()
    arguments: Any = {}
    if position < len(text) and text[position] == "{":
        try:
            arguments, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
        while position < len(text) and text[position].isspace():
            position += 1
    if position >= len(text) or text[position] != ")":
        return None
    return {"name": opened.group(1), "arguments": arguments}, position + 1


def _unfence(text: str) -> str:
    """The text inside a code fence that makes up all of ``text``, else ``text``, stripped."""
    text = text.strip()
    fenced = _FENCED.fullmatch(text)
    return fenced.group(2).strip() if fenced is not None else text


def _json_values(text: str) -> list[Any]:
    """The JSON values that make up ``text`` (one or several, separated by whitespace);
    [] when there is anything else in it."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position].isspace():
            position += 1
        if position == end:
            return values
        if text[position] not in "{[":
            return []
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return []
        values.append(value)


def _calls_in(value: Any) -> list[tuple[str, dict[str, Any], str | None]]:
    """(name, arguments, problem) for each call-shaped object in a JSON value."""
    if isinstance(value, list):
        return [call for item in value for call in _calls_in(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("tool_calls"), list) and len(value) == 1:
        return _calls_in(value["tool_calls"])
    shape = _call_shape(value)
    if shape is None:
        return []
    name, raw_args = shape
    args, error = parse_arguments(raw_args)
    if args is None:
        return [(name, {}, f"{name}: {error}")]
    return [(name, args, None)]


def _call_shape(obj: dict[str, Any]) -> tuple[str, Any] | None:
    """(name, raw arguments) when ``obj`` is shaped like a tool call, else None."""
    function = obj.get("function")
    holder: dict[str, Any] = obj
    name: Any = None
    if isinstance(function, dict):
        holder, name = function, function.get("name")
        if set(obj) - {"function"} - _EXTRA_KEYS:
            return None
    elif isinstance(function, str):
        name = function
    else:
        name = next((obj[k] for k in _NAME_KEYS if k in obj), None)
    if not isinstance(name, str) or not name:
        return None
    keys = set(holder) - _EXTRA_KEYS - {"function", *_NAME_KEYS}
    arg_keys = [k for k in _ARG_KEYS if k in keys]
    if len(arg_keys) > 1 or keys - set(arg_keys):
        return None  # something else is in it: data, not a call
    return name, holder.get(arg_keys[0]) if arg_keys else None


def _schemas(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Tool name → its parameters schema, from OpenAI tool entries (or bare specs)."""
    schemas: dict[str, Any] = {}
    for tool in tools:
        spec = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and isinstance(spec.get("name"), str):
            schemas[spec["name"]] = spec.get("parameters")
    return schemas


def _check(name: str, args: dict[str, Any], schemas: dict[str, Any]) -> str | None:
    if name not in schemas:
        return f"{name}: no such tool; {_describe(name, schemas)}"
    schema = schemas[name]
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    missing = [k for k in required if k not in args] if isinstance(required, list) else []
    if missing:
        return f"{name}: missing required argument(s) {', '.join(map(str, missing))}"
    if schema.get("additionalProperties") is False:
        unknown = sorted(k for k in args if k not in properties)
        if unknown:
            return f"{name}: unknown argument(s) {', '.join(unknown)}"
    for key, value in args.items():
        prop = properties.get(key)
        if isinstance(prop, dict) and not _fits(value, prop):
            return f"{name}: argument {key} does not fit its schema ({_json_kind(value)} given)"
    return None


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        return False
    kind = schema.get("type")
    if kind is None:
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            return any(_fits(value, b) for b in branches if isinstance(b, dict))
        return True
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return not kinds or any(_is_type(value, k) for k in kinds)


def _is_type(value: Any, kind: Any) -> bool:
    if kind == "null":
        return value is None
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    expected = _JSON_TYPES.get(kind) if isinstance(kind, str) else None
    if expected is None:
        return True  # a type we do not check
    return isinstance(value, expected) and (kind == "boolean" or not isinstance(value, bool))


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
