"""The dream's LLM backends, chosen by ``dream.llm``: ``bridge`` (the host lends its LLM over
``WS /v1/llm/bridge``), ``callback`` (somnid POSTs to a URL), ``openai`` (somnid calls an
OpenAI-compatible endpoint), or ``off``. All speak OpenAI chat-completions shapes and raise
:class:`LLMError` for every LLM-side failure; :mod:`.textcalls` reads tool calls that small
models write as text.
"""

from somnid.dream.llm.base import (
    ChatBackend,
    ChatOptions,
    ChatResult,
    LLMBadResponse,
    LLMError,
    LLMRejected,
    LLMTimeout,
    LLMUnavailable,
    Usage,
)
from somnid.dream.llm.bridge import BridgeBackend, BridgeHub, HostInfo
from somnid.dream.llm.callback import CallbackBackend
from somnid.dream.llm.factory import build_backend
from somnid.dream.llm.openai import OpenAIBackend
from somnid.dream.llm.textcalls import parse_arguments, recognise_text_tool_calls

__all__ = [
    "BridgeBackend",
    "BridgeHub",
    "CallbackBackend",
    "ChatBackend",
    "ChatOptions",
    "ChatResult",
    "HostInfo",
    "LLMBadResponse",
    "LLMError",
    "LLMRejected",
    "LLMTimeout",
    "LLMUnavailable",
    "OpenAIBackend",
    "Usage",
    "build_backend",
    "parse_arguments",
    "recognise_text_tool_calls",
]
