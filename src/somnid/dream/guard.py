"""The about_me guard: the dreamer must not write its own role into the agent's self-image.

``about_me`` describes the agent as its users know it. A consolidating model tends to
describe itself there ("I am a memory management assistant that extracts memories from
session-logs"), which would turn the waking agent into the dreamer. The original refused
five such Chinese phrases; this list covers English and Chinese, matched without regard to
case, spaces, hyphens or underscores.
"""

from __future__ import annotations

import re

_DREAMER_ROLE_ZH = (
    "记忆管理助手",
    "记忆整理助手",
    "记忆整理过程",
    "记忆巩固过程",
    "睡眠代理",
    "睡眠智能体",
    "睡眠过程",
    "睡眠阶段",
    "做梦过程",
    "梦境整理",
    "从session-log",
    "从会话日志",
    "提取记忆",
    "整合记忆",
    "巩固记忆",
    "纠正记忆",
    "修正记忆",
    "淘汰记忆",
    "退休记忆",
    "归档记忆",
)
_DREAMER_ROLE_EN = (
    "sleep agent",
    "dream agent",
    "sleep process",
    "dreaming process",
    "consolidation process",
    "memory management assistant",
    "memory organising assistant",
    "memory organizing assistant",
    "memory consolidation assistant",
    "session-log",
    "extract memories",
    "extracting memories",
    "consolidate memories",
    "consolidating memories",
    "retire memories",
    "retiring memories",
    "correct memories",
)
_IGNORED = re.compile(r"[\s\-_]+")


def _squash(text: str) -> str:
    return _IGNORED.sub("", text.casefold())


_PHRASES = tuple((_squash(phrase), phrase) for phrase in (*_DREAMER_ROLE_ZH, *_DREAMER_ROLE_EN))


def dreamer_role_phrase(content: str) -> str | None:
    """The first phrase in ``content`` that describes the dreamer's role, or None."""
    squashed = _squash(content)
    for needle, phrase in _PHRASES:
        if needle in squashed:
            return phrase
    return None
