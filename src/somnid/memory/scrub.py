"""Obvious secrets out of captured text, before it reaches the disk.

Pure: text in, text out. What is scrubbed (each match becomes ``[REDACTED]``, keeping what
names the secret, such as ``password=`` or the URL's user): private key blocks, API keys
of the well-known shapes (OpenAI/Anthropic ``sk-``, GitHub ``ghp_``/``github_pat_``, Slack
``xox?-``, AWS ``AKIA``, Google ``AIza``, Stripe ``sk_live_``), bearer tokens, JSON web
tokens, passwords in URLs, and ``password=`` / ``api_key:`` / ``token=`` style assignments.
``capture.scrub_patterns`` adds regular expressions of one's own (the whole match goes).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

REDACTED = "[REDACTED]"

_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
    re.S,
)
_KEYS = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})"
)
_BEARER = re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{12,}")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)")
_ASSIGNED = re.compile(
    r"(?i)\b((?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token"
    r"|client[_-]?secret|token)[\"']?\s*[:=]\s*[\"']?)([^\s\"',;]{6,})"
)


@functools.lru_cache(maxsize=8)
def _extra(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(pattern) for pattern in patterns)


def check_patterns(patterns: Sequence[str]) -> None:
    """Raise ``re.error`` naming the first pattern that does not compile."""
    _extra(tuple(patterns))


def scrub(text: str, extra: Sequence[str] = ()) -> str:
    """``text`` with every obvious secret (and each match of ``extra``) replaced."""
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _KEYS.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: m.group(1) + REDACTED, text)
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    text = _ASSIGNED.sub(lambda m: m.group(1) + REDACTED, text)
    for pattern in _extra(tuple(extra)):
        text = pattern.sub(REDACTED, text)
    return text
