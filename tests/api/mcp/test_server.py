"""The MCP server in process: the registry's tools, schemas and errors, seen by the SDK's client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from somnid.api.mcp_server import build_server
from somnid.config import Settings
from somnid.errors import InvalidArguments
from somnid.memory.clock import ManualClock
from somnid.runtime import Runtime
from somnid.tools.memory_tools import MemoryTools, ToolContext
from somnid.tools.registry import ToolRegistry


@pytest.fixture
async def runtime(settings: Settings, clock: ManualClock) -> AsyncIterator[Runtime]:
    async with Runtime.open(settings, clock=clock) as opened:
        yield opened


def text_of(result: Any) -> str:
    [block] = result.content
    assert block.type == "text"
    text: str = block.text
    return text


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_tools_are_the_registrys(runtime: Runtime, mode: str) -> None:
    async with Client(build_server(runtime.tools), mode=mode) as client:
        listed = (await client.list_tools()).tools
    specs = runtime.tools.specs
    assert [tool.name for tool in listed] == list(specs)
    for tool in listed:
        spec = specs[tool.name]
        assert tool.description == spec.description
        assert tool.input_schema == spec.parameters
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is spec.concurrent
        assert tool.annotations.destructive_hint is False
    assert specs["list_intentions"].parameters["properties"] == {}


async def test_a_call_answers_the_tools_markdown(runtime: Runtime) -> None:
    async with Client(build_server(runtime.tools)) as client:
        added = await client.call_tool("add_intention", {"what": "Water the tomatoes"})
        listed = await client.call_tool("list_intentions", {})
        empty_args = await client.call_tool("search_knowledge")
    assert not added.is_error and text_of(added).startswith("Added intention pi-")
    assert "Water the tomatoes" in text_of(listed)
    assert text_of(empty_args).startswith("No matching knowledge")
    assert added.structured_content is None


async def test_bad_arguments_are_a_tool_error_with_the_routes_message(runtime: Runtime) -> None:
    args = {"query": "x", "limit": "many", "colour": "red"}
    with pytest.raises(InvalidArguments) as raised:
        runtime.tools.spec("recall_memories").validate(args)
    async with Client(build_server(runtime.tools)) as client:
        result = await client.call_tool("recall_memories", args)
        after = await client.call_tool("list_intentions", {})
    assert result.is_error
    assert result.structured_content == {
        "code": "invalid_arguments",
        "detail": raised.value.detail,
        "errors": raised.value.extra["errors"],
    }
    assert text_of(result).splitlines() == [
        "invalid arguments for recall_memories: limit, colour",
        "- limit: Input should be a valid integer, unable to parse string as an integer",
        "- colour: Extra inputs are not permitted",
    ]
    assert not after.is_error


async def test_an_unknown_tool_and_a_domain_error_are_tool_errors(runtime: Runtime) -> None:
    async with Client(build_server(runtime.tools)) as client:
        unknown = await client.call_tool("remember_everything", {"what": "x"})
        bad_kind = await client.call_tool("recall_memories", {"query": "x", "types": "dreams"})
    assert unknown.is_error and unknown.structured_content == {
        "code": "not_found",
        "detail": "no tool named 'remember_everything'; tools/list lists them",
    }
    assert bad_kind.is_error and text_of(bad_kind) == "unknown memory types: dreams"
    assert bad_kind.structured_content == {
        "code": "invalid_input",
        "detail": "unknown memory types: dreams",
    }


async def test_a_failure_in_substance_is_a_tool_error(runtime: Runtime) -> None:
    async with Client(build_server(runtime.tools)) as client:
        gone = await client.call_tool("complete_intention", {"intention_id": "pi-19990101-001"})
        empty = await client.call_tool("recall_memories", {"query": "  "})
        fine = await client.call_tool("list_intentions", {})
    assert gone.is_error and "There is no open intention" in text_of(gone)
    assert empty.is_error and text_of(empty).startswith("Give a query")
    assert not fine.is_error and text_of(fine) == "No open intentions."


class ExplodingTools(MemoryTools):
    async def list_intentions(self, ctx: ToolContext) -> str:
        """List every open intention, soonest due first."""
        raise RuntimeError("the disk caught fire")


async def test_an_unexpected_failure_is_a_tool_error_without_internals(
    runtime: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    async def nothing(ctx: ToolContext, *_: object) -> str:
        return ""

    tools = ExplodingTools(
        runtime.memories, runtime.recaller, runtime.intentions, runtime.clock, runtime.seen,
        nothing, nothing,
    )  # fmt: skip
    async with Client(build_server(ToolRegistry(tools))) as client:
        result = await client.call_tool("list_intentions", {})
        still = await client.call_tool("search_knowledge", {})
    assert result.is_error
    assert result.structured_content == {
        "code": "internal_error",
        "detail": "somnid hit an unexpected error; see its log",
    }
    assert "fire" not in text_of(result)
    assert "the disk caught fire" in caplog.text
    assert not still.is_error
