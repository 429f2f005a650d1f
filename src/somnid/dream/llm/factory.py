"""The backend ``dream.llm`` names, built once by the composition root.

Kept apart from :mod:`somnid.dream.llm.base`, which every backend imports: building them
there made an import circle of the five backend files.
"""

from __future__ import annotations

import os

from somnid.config import DreamSettings
from somnid.dream.llm.base import ChatBackend
from somnid.dream.llm.bridge import BridgeBackend, BridgeHub
from somnid.dream.llm.callback import CallbackBackend
from somnid.dream.llm.openai import OpenAIBackend

__all__ = ["build_backend"]


def build_backend(settings: DreamSettings, bridge: BridgeHub) -> ChatBackend | None:
    """The backend ``dream.llm`` names, or None for "off". Reads the OpenAI key from the
    environment variable ``dream.openai.api_key_env`` names (call from the composition
    root only). A backend that lacks its settings is returned anyway and reports
    ``available() == False``."""
    timeout = settings.request_timeout_s
    if settings.llm == "off":
        return None
    if settings.llm == "bridge":
        return BridgeBackend(bridge, timeout_s=timeout)
    if settings.llm == "callback":
        return CallbackBackend(settings.callback_url, timeout_s=timeout)
    openai = settings.openai
    return OpenAIBackend(
        openai.base_url,
        openai.model,
        api_key=os.environ.get(openai.api_key_env) or None,
        timeout_s=timeout,
    )
