"""The memory browser's login: a random session kept by the daemon, never the token.

``POST /ui/login`` with the token (in a JSON body, never in a URL) answers with an
``HttpOnly; SameSite=Strict`` cookie holding a fresh random session id. The daemon keeps
only a hash of it, with when it expires (:data:`MAX_AGE_S` after login, or
:data:`IDLE_S` after its last use) and a fingerprint of the token it was opened with: a
new token, a logout, a restart or the expiry ends it. The id is worth nothing anywhere
else: it is not derived from the token, and a copy taken from one login is refused after
that session's logout.

A session opens only what the memory browser uses (:data:`SCOPE`): browsing, searching,
editing, history, revert, purge, sleep status, and sync (its status, a round now, settling
its conflicts). It is never a key to the agent's tools, capture, the bridge or MCP.

Every request of a session also carries ``X-Somnid-UI: <page key>``, a second random
secret of the session (the daemon keeps its hash too) that the login answers with and the
page keeps in its origin's storage (the login itself says ``X-Somnid-UI: 1``). A cookie
is not tied to a port: the browser sends it to every other service on 127.0.0.1 too,
which could replay it. Without the page key it opens nothing, not even a logout. No
cross-site form can send the header either, and a cross-site script cannot without a
preflight the Origin check refuses. The sleep events' stream, which an ``EventSource``
opens without headers, may carry the key as ``?key=`` instead (the access log redacts it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie

COOKIE = "somnid_ui"
UI_HEADER = "x-somnid-ui"
EVENTS_PATH = "/v1/sleep/events"
MAX_AGE_S = 7 * 24 * 3600
IDLE_S = 12 * 3600
MAX_SESSIONS = 32
"""Open sessions kept at most: a new login past this ends the least recently used one."""
SCOPE = (
    "/ui",
    "/v1/memories",
    "/v1/history",
    "/v1/dreams/",
    "/v1/recall",
    "/v1/intentions",
    "/v1/sleep/status",
    "/v1/sleep/events",
    "/v1/health",
    "/v1/sync",  # POST /v1/sync, GET /v1/sync/status, DELETE /v1/sync/conflicts: the Sync tab
)
"""What a memory-browser session may reach (path prefixes): what the browser uses."""


@dataclass(slots=True)
class _Session:
    token: str
    """A fingerprint of the token the session was opened with."""
    key: str
    """A hash of the page key: nothing derives it from the cookie."""
    expires: float
    last_used: float


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def _fingerprint(token: str) -> str:
    return hmac.new(token.encode(), b"somnid-ui-session-v2", hashlib.sha256).hexdigest()


class UISessions:
    """The open memory-browser sessions, by a hash of their id. Thread-safe."""

    def __init__(
        self,
        *,
        max_age_s: float = MAX_AGE_S,
        idle_s: float = IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_age_s = max_age_s
        self.idle_s = idle_s
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def open(self, token: str) -> tuple[str, str]:
        """A new session for ``token``: the id to set as the cookie, and the page key."""
        value, key = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        now = self._clock()
        with self._lock:
            self._prune(now)
            while len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions, key=lambda k: self._sessions[k].last_used)
                del self._sessions[oldest]
            self._sessions[_digest(value)] = _Session(
                _fingerprint(token), _digest(key), now + self.max_age_s, now
            )
        return value, key

    def close(self, value: str | None, key: str | None) -> bool:
        """End the session ``value`` whose page key is ``key`` (a logout); whether it was
        one (the cookie alone, which any local service may hold, ends nothing)."""
        if not value or not key:
            return False
        with self._lock:
            session = self._sessions.get(_digest(value))
            if session is None or not hmac.compare_digest(session.key, _digest(key)):
                return False
            del self._sessions[_digest(value)]
            return True

    def valid(self, value: str, token: str, key: str) -> bool:
        """Whether ``value`` is an open session of ``token`` whose page key is ``key`` (its
        use keeps it alive)."""
        now = self._clock()
        digest = _digest(value)
        with self._lock:
            session = self._sessions.get(digest)
            if session is None:
                return False
            if now >= session.expires or now - session.last_used >= self.idle_s:
                del self._sessions[digest]
                return False
            if not hmac.compare_digest(session.key, _digest(key)):
                return False
            if not hmac.compare_digest(session.token, _fingerprint(token)):
                return False  # the token was rotated: the session is of no use
            session.last_used = now
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _prune(self, now: float) -> None:
        gone = [
            key
            for key, s in self._sessions.items()
            if now >= s.expires or now - s.last_used >= self.idle_s
        ]
        for key in gone:
            del self._sessions[key]


def set_cookie_header(value: str, max_age_s: float = MAX_AGE_S) -> str:
    return f"{COOKIE}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={int(max_age_s)}"


def clear_cookie_header() -> str:
    return f"{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"


def cookie_value(headers: dict[str, str]) -> str | None:
    """The session id a request's Cookie header carries, if any."""
    raw = headers.get("cookie")
    if not raw:
        return None
    try:
        morsel = SimpleCookie(raw).get(COOKIE)
    except Exception:  # a malformed Cookie header is no session
        return None
    return morsel.value if morsel is not None and morsel.value else None


def in_scope(path: str) -> bool:
    return any(path == p or path.startswith(p if p.endswith("/") else p + "/") or
               (not p.endswith("/") and path.startswith(p + "?")) for p in SCOPE)  # fmt: skip


def cookie_matches(
    sessions: UISessions | None, expected_token: str, headers: dict[str, str], method: str,
    path: str, query_key: str | None = None,
) -> bool:  # fmt: skip
    """Whether the request's UI cookie is an open session and it carries the session's
    page key (``query_key``: the sleep events' ``?key=``, for an EventSource)."""
    if sessions is None or not in_scope(path):
        return False
    value = cookie_value(headers)
    if value is None:
        return False
    presented = headers.get(UI_HEADER)
    if presented is None and method in ("GET", "HEAD") and path == EVENTS_PATH:
        presented = query_key
    return presented is not None and sessions.valid(value, expected_token, presented)
