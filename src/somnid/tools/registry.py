"""The tool list: schemas for ``GET /v1/tools``, validated calls for ``POST /v1/tools/{name}``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from somnid.errors import NotFound
from somnid.provenance import Actor, acting
from somnid.tools.memory_tools import Failed, MemoryTools, ToolContext
from somnid.tools.spec import ToolSpec, tool_spec

# Tools that rewrite intention files must not run beside each other; searches may.
_WRITERS = {"add_intention", "complete_intention", "cancel_intention", "dream_now"}
TOOL_NAMES = (
    "recall_memories",
    "search_episodes",
    "search_recent_conversation",
    "search_knowledge",
    "add_intention",
    "complete_intention",
    "cancel_intention",
    "list_intentions",
    "dream_now",
)


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a tool said, and whether it says the call failed in substance (``Failed``)."""

    text: str
    is_error: bool = False


class ToolRegistry:
    def __init__(self, tools: MemoryTools) -> None:
        self.on_call: Callable[[], None] = lambda: None
        """Told of every call: an agent is at work (the sleep scheduler's idle clock)."""
        self._calls: dict[str, Callable[..., Awaitable[str]]] = {}
        self.specs: dict[str, ToolSpec] = {}
        for name in TOOL_NAMES:
            method = getattr(tools, name)
            self._calls[name] = method
            self.specs[name] = tool_spec(method, concurrent=name not in _WRITERS)

    def spec(self, name: str) -> ToolSpec:
        spec = self.specs.get(name)
        if spec is None:
            raise NotFound(f"no tool named {name!r}; GET /v1/tools lists them")
        return spec

    async def call(self, name: str, args: dict[str, Any], ctx: ToolContext) -> ToolAnswer:
        arguments = self.spec(name).validate(args)
        self.on_call()
        with acting(Actor("tool", name, agent=ctx.user_id, session=ctx.session_id)):
            answer = await self._calls[name](ctx, **arguments)
        return ToolAnswer(str(answer), is_error=isinstance(answer, Failed))
