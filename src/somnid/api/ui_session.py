"""The memory browser's login: a cookie that stands for the token, never the token itself.

``POST /ui/login`` with the token (in a JSON body, never in a URL) answers with an
``HttpOnly; SameSite=Strict`` cookie holding an HMAC of the token: a new token ends every
session. The guard takes the cookie for ``/ui`` and ``/v1`` requests; a request that may
change something (any method but GET, HEAD, OPTIONS) must also carry ``X-Somnid-UI: 1``,
which no cross-site form can send, and which a cross-site script cannot send without a
preflight the Origin check refuses.
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie

COOKIE = "somnid_ui"
UI_HEADER = "x-somnid-ui"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
COOKIE_PATHS = ("/v1/", "/ui")
MAX_AGE_S = 7 * 24 * 3600


def session_value(token: str) -> str:
    return hmac.new(token.encode(), b"somnid-ui-session-v1", hashlib.sha256).hexdigest()


def set_cookie_header(token: str) -> str:
    return (
        f"{COOKIE}={session_value(token)}; Path=/; HttpOnly; SameSite=Strict; Max-Age={MAX_AGE_S}"
    )


def clear_cookie_header() -> str:
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"


def cookie_matches(expected_token: str, headers: dict[str, str], method: str, path: str) -> bool:
    """Whether the request's UI cookie stands for the token, and may do what it asks."""
    if not path.startswith(COOKIE_PATHS):
        return False
    raw = headers.get("cookie")
    if not raw:
        return False
    try:
        morsel = SimpleCookie(raw).get(COOKIE)
    except Exception:  # a malformed Cookie header is no session
        return False
    if morsel is None or not hmac.compare_digest(morsel.value, session_value(expected_token)):
        return False
    return method in SAFE_METHODS or headers.get(UI_HEADER) == "1"
