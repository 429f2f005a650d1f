"""Tool calls written as text by small local models, tool-call arguments, and Usage."""

from __future__ import annotations

import json
from typing import Any

import pytest

from somnid.dream.llm import Usage
from somnid.dream.llm.textcalls import (
    closest_tool,
    parse_arguments,
    recognise_text_tool_calls,
    scan_text_tool_calls,
)


def _tool(name: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    parameters = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    return {
        "type": "function",
        "function": {"name": name, "description": "", "parameters": parameters},
    }


TOOLS = [
    _tool("read_session_log", {"log": {"type": "string"}}, ["log"]),
    _tool(
        "search_knowledge",
        {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "entry_type": {"type": ["string", "null"], "enum": ["fact", "skill", None]},
        },
        [],
    ),
    _tool("decay_all_knowledge", {}, []),
]
READ = {"name": "read_session_log", "arguments": {"log": "2026-10-03-a"}}


def _calls(content: str, tools: list[dict[str, Any]] = TOOLS) -> list[tuple[str, dict[str, Any]]]:
    message = {"role": "assistant", "content": content}
    found = recognise_text_tool_calls(message, tools)
    for number, call in enumerate(found, 1):
        assert call["id"] == f"text-{number}" and call["type"] == "function"
        assert isinstance(call["function"]["arguments"], str)
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in found]


@pytest.mark.parametrize(
    "content",
    [
        json.dumps(READ),
        "  \n" + json.dumps(READ, indent=2) + "\n",
        f"I will read the log first.\n```json\n{json.dumps(READ)}\n```",
        f"```\n{json.dumps(READ)}\n```\nThen I will summarise.",
        f"<tool_call>\n{json.dumps(READ)}\n</tool_call>",
        f"Let me look.\n<tool_call>{json.dumps(READ)}",  # closing tag cut off
        f"<tool_call>\n```json\n{json.dumps(READ)}\n```\n</tool_call>",
        json.dumps(
            {"function": {"name": "read_session_log", "arguments": '{"log": "2026-10-03-a"}'}}
        ),
        json.dumps(
            {
                "type": "function",
                "function": {"name": "read_session_log", "arguments": READ["arguments"]},
            }
        ),
        json.dumps({"tool": "read_session_log", "args": {"log": "2026-10-03-a"}}),
        json.dumps({"name": "read_session_log", "parameters": {"log": "2026-10-03-a"}}),  # Llama 3
        json.dumps({"name": "read_session_log", "arguments": '{"log": "2026-10-03-a"}'}),
        "[TOOL_CALLS] " + json.dumps([READ]),  # Mistral
        "<|python_tag|>" + json.dumps(READ),
        json.dumps({"tool_calls": [{"id": "x", "type": "function", "function": READ}]}),
        # Seen with small local models (issue 12): JSON with prose around it, and calls
        # written like a function call.
        f"Here is the call: {json.dumps(READ)}",
        f"I will read the log now.\n{json.dumps(READ, indent=2)}\nThen I will store what matters.",
        'read_session_log({"log": "2026-10-03-a"})',
        'First I read it: read_session_log( {"log": "2026-10-03-a"} ) and then think.',
    ],
)
def test_one_call_in_many_shapes(content: str) -> None:
    assert _calls(content) == [("read_session_log", {"log": "2026-10-03-a"})]


def test_several_calls() -> None:
    search = {"name": "search_knowledge", "arguments": {"query": "pnpm", "limit": 3}}
    expected = [
        ("read_session_log", {"log": "2026-10-03-a"}),
        ("search_knowledge", search["arguments"]),
    ]
    assert _calls(json.dumps([READ, search])) == expected
    tagged = (
        f"<tool_call>{json.dumps(READ)}</tool_call>\n<tool_call>{json.dumps(search)}</tool_call>"
    )
    assert _calls(tagged) == expected
    assert _calls(f"```json\n{json.dumps(READ)}\n{json.dumps(search)}\n```") == expected
    assert _calls(json.dumps({"name": "decay_all_knowledge"})) == [("decay_all_knowledge", {})]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (json.dumps({"name": "delete_everything", "arguments": {}}), "no such tool"),
        (
            json.dumps({"name": "read_session_log", "arguments": {}}),
            "missing required argument(s) log",
        ),
        (
            json.dumps({"name": "read_session_log", "arguments": {"log": "a", "x": 1}}),
            "unknown argument(s) x",
        ),
        (
            json.dumps({"name": "read_session_log", "arguments": {"log": 7}}),
            "argument log does not fit",
        ),
        (json.dumps({"name": "search_knowledge", "arguments": {"limit": "3"}}), "argument limit"),
        (json.dumps({"name": "search_knowledge", "arguments": {"limit": True}}), "argument limit"),
        (json.dumps({"name": "search_knowledge", "arguments": {"entry_type": "x"}}), "entry_type"),
        (json.dumps({"name": "read_session_log", "arguments": "{log: 1}"}), "not valid JSON"),
        (json.dumps({"name": "read_session_log", "arguments": "[1]"}), "must be a JSON object"),
    ],
)
def test_calls_that_do_not_fit_are_not_run(content: str, problem: str) -> None:
    assert _calls(content) == []
    scan = scan_text_tool_calls({"content": content}, TOOLS)
    assert scan.calls == [] and len(scan.problems) == 1
    assert problem in scan.problems[0]


def test_only_valid_calls_of_a_list_are_kept() -> None:
    content = json.dumps([READ, {"name": "nope", "arguments": {}}])
    scan = scan_text_tool_calls({"content": content}, TOOLS)
    assert [c["function"]["name"] for c in scan.calls] == ["read_session_log"]
    assert len(scan.problems) == 1
    assert scan.problems[0].startswith("nope: no such tool; the closest tool is ")


def test_an_unknown_name_is_answered_with_the_closest_tool_and_its_schema() -> None:
    content = json.dumps({"name": "read_sesion_log", "arguments": {"log": "x"}})
    [problem] = scan_text_tool_calls({"content": content}, TOOLS).problems
    assert "no such tool; the closest tool is read_session_log" in problem
    assert '"required": ["log"]' in problem
    assert closest_tool("search", TOOLS) == ("search_knowledge", TOOLS[1]["function"]["parameters"])
    assert closest_tool("x", []) is None


def test_call_syntax_needs_a_listed_tool_and_a_whole_call() -> None:
    assert _calls("decay_all_knowledge()") == [("decay_all_knowledge", {})]
    assert _calls('print({"log": "a"})') == []  # not a tool: nothing to run
    assert _calls('read_session_log({"log": "a"}') == []  # no closing parenthesis
    assert _calls("We could call read_session_log later.") == []


@pytest.mark.parametrize(
    "content",
    [
        "",
        "I consolidated three logs and updated the profile. Done.",
        "The user prefers pnpm over npm {which matters}.",
        json.dumps({"name": "Alice", "age": 34}),  # data, not a call
        json.dumps({"name": "read_session_log", "description": "Read one log.", "parameters": {}}),
        json.dumps({"type": "object", "properties": {}}),
        json.dumps(["fact", "skill"]),
        "42",
        f"```python\n{json.dumps(READ)}\n```",  # a code sample, not a call
        "```json\n{not json}\n```",
        "<tool_call>{broken</tool_call>",
    ],
)
def test_text_without_a_call(content: str) -> None:
    assert _calls(content) == []


def test_real_tool_calls_and_odd_content_are_left_alone() -> None:
    message = {"content": json.dumps(READ), "tool_calls": [{"id": "c", "function": READ}]}
    assert recognise_text_tool_calls(message, TOOLS) == []
    assert recognise_text_tool_calls({"content": None}, TOOLS) == []
    assert recognise_text_tool_calls({"content": json.dumps(READ)}, []) == []


def test_schemaless_tools_accept_any_arguments() -> None:
    tools = [{"type": "function", "function": {"name": "free"}}, {"name": "bare", "parameters": {}}]
    assert _calls(json.dumps({"name": "free", "arguments": {"x": 1}}), tools) == [
        ("free", {"x": 1})
    ]
    assert _calls(json.dumps({"name": "bare", "arguments": {"y": [1]}}), tools) == [
        ("bare", {"y": [1]})
    ]


def test_integral_floats_count_as_integers() -> None:
    content = json.dumps({"name": "search_knowledge", "arguments": {"limit": 3.0}})
    assert _calls(content) == [("search_knowledge", {"limit": 3.0})]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"log": "a"}', {"log": "a"}),
        ({"log": "a"}, {"log": "a"}),
        ("", {}),
        ("  ", {}),
        (None, {}),
        ('"{\\"log\\": \\"a\\"}"', {"log": "a"}),  # double-encoded
        ('```json\n{"log": "a"}\n```', {"log": "a"}),
    ],
)
def test_parse_arguments(raw: str | dict[str, Any] | None, expected: dict[str, Any]) -> None:
    assert parse_arguments(raw) == (expected, None)


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (
            '{"log": "a",}',
            "not valid JSON: Expecting property name enclosed in double quotes at line 1",
        ),
        ('{"log": ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object, got an array"),
        ('"text"', "must be a JSON object, got a string"),
        ("3", "must be a JSON object, got a number"),
    ],
)
def test_parse_arguments_errors_speak_to_the_model(raw: str, error: str) -> None:
    args, message = parse_arguments(raw)
    assert args is None and message is not None
    assert message.startswith("arguments ") and error in message


def test_usage_from_the_wire() -> None:
    assert Usage.from_wire(None) == Usage() and Usage().total == 0
    assert Usage.from_wire({"prompt_tokens": 10, "completion_tokens": 2}) == Usage(10, 2, 0)
    details = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 6}}
    assert Usage.from_wire(details).cached_tokens == 6
    assert Usage.from_wire({"prompt_cache_hit_tokens": 4}).cached_tokens == 4
    assert Usage.from_wire({"prompt_tokens": "many", "completion_tokens": True}) == Usage()
    # A broken host: Infinity took the bridge's socket down (int() of it), 1e308 stayed in
    # the tokens metric until a restart.
    for odd in (float("inf"), float("nan"), 1e308, -5, 10**400):
        assert Usage.from_wire({"prompt_tokens": odd, "cached_tokens": odd}) == Usage()
    assert Usage(1, 2, 0) + Usage(10, 20, 5) == Usage(11, 22, 5)
    assert (Usage(1, 2, 0) + Usage(10, 20, 5)).total == 33


def test_arguments_nested_past_the_stack_are_refused_with_a_reason() -> None:
    # A probe: such arguments ended an agentic dream in error (RecursionError).
    deep = "[" * 3000 + "]" * 3000
    assert parse_arguments(deep) == (None, "arguments are not valid JSON: it is nested too deep")
    assert parse_arguments(json.dumps('{"a": ' + deep + "}")) == (
        None,
        "arguments are not valid JSON: it is nested too deep",
    )
    # Nor did a number of more than 4,300 digits (ValueError).
    long = '{"page": ' + "9" * 5000 + "}"
    assert parse_arguments(long) == (
        None,
        "arguments are not valid JSON: it holds a number too long to read",
    )
    assert parse_arguments({"log": "a\ud800\x00b"}) == ({"log": "ab"}, None)


@pytest.mark.parametrize(
    "content",
    [
        "[" * 50_000 + "]" * 50_000,
        '{"name": "search_knowledge", "arguments": {"limit": 1' + "0" * 5000 + "}}",
        'search_knowledge({"limit": ' + "[" * 5000 + "]" * 5000 + "})",
    ],
    ids=["nested", "long-number", "call-syntax"],
)
def test_text_too_deep_or_long_to_read_is_no_call_and_says_why(content: str) -> None:
    # A probe: each ended an agentic dream in error (RecursionError, ValueError).
    found = scan_text_tool_calls({"role": "assistant", "content": content}, TOOLS)
    assert found.calls == []
    assert found.problems == ["the text holds JSON nested too deep or a number too long to read"]
