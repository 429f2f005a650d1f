"""The memory browser's door: page and assets public, the token only in a POST body, a
random server-side session in a cookie (HttpOnly, SameSite=Strict) for what the browser
uses only, ended by logout, expiry or a new token, and every state-changing request with it
carrying X-Somnid-UI from the same origin."""

from __future__ import annotations

import hashlib
import hmac
import re
from pathlib import Path

import httpx
from fastapi.testclient import TestClient

from somnid.ui.session import UISessions
from tests.api.problems import assert_problem
from tests.clients import TEST_TOKEN
from tests.daemon import read_token, start_daemon

UI = {"X-Somnid-UI": "1"}


def login(client: httpx.Client | TestClient, token: str = TEST_TOKEN) -> dict[str, str]:
    """The headers of a logged-in page: its cookie and its page key."""
    response = client.post("/ui/login", json={"token": token}, headers=UI)
    assert response.status_code == 200, response.text
    header = response.headers["set-cookie"]
    assert "HttpOnly" in header and "SameSite=Strict" in header and "Path=/" in header
    value = header.split(";")[0].split("=", 1)[1]
    assert len(value) >= 40 and TEST_TOKEN not in header
    key = response.json()["key"]
    assert len(key) >= 40 and key not in header and value not in key
    client.cookies.clear()
    return {"Cookie": f"somnid_ui={value}", "X-Somnid-UI": key}


def cookie_only(page: dict[str, str]) -> dict[str, str]:
    return {"Cookie": page["Cookie"]}


def test_the_page_and_its_assets_need_no_token(client: TestClient) -> None:
    client.headers.pop("Authorization")
    page = client.get("/ui")
    assert page.status_code == 200 and "<title>somnid memory</title>" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    links = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    # Nothing outside; the empty icon is inline (a /favicon.ico asked for was a 401 each load).
    assert links and all(link.startswith("/ui/assets/") or link == "data:," for link in links)
    assert client.get("/ui/assets/app.js").status_code == 200
    assert_problem(client.get("/v1/memories"), 401, "unauthorized")
    # `/ui/` as typed was a JSON 401 for a first visit: it leads to the page.
    typed = client.get("/ui/", follow_redirects=False)
    assert typed.status_code == 307 and typed.headers["location"].endswith("/ui")


def test_login_refuses_a_wrong_token_and_a_cross_site_form(client: TestClient) -> None:
    client.headers.pop("Authorization")
    assert_problem(
        client.post("/ui/login", json={"token": "nope"}, headers=UI), 401, "unauthorized"
    )
    assert_problem(client.post("/ui/login", json={"token": TEST_TOKEN}), 400, "invalid_input")
    evil = {**UI, "Origin": "http://evil.example"}
    assert_problem(
        client.post("/ui/login", json={"token": TEST_TOKEN}, headers=evil), 403, "forbidden_origin"
    )


def test_the_cookie_reads_and_writes_only_with_the_page_key(client: TestClient) -> None:
    page = login(client)
    cookie = cookie_only(page)
    client.headers.pop("Authorization")
    assert client.get("/v1/memories", headers=page).status_code == 200
    body = {"name": "via-cookie"}
    # The cookie alone, which the browser sends to every service on 127.0.0.1 (a port is
    # no part of a cookie's site), opened every read, and with `X-Somnid-UI: 1` every
    # write, purge included: any local service the browser visited could replay it.
    for headers in (cookie, {**cookie, **UI}, {**cookie, "X-Somnid-UI": "0" * 64}):
        assert_problem(client.get("/v1/memories", headers=headers), 401, "unauthorized")
        assert_problem(
            client.post("/v1/memories/knowledge", json=body, headers=headers), 401, "unauthorized"
        )
    made = client.post("/v1/memories/knowledge", json=body, headers=page)
    assert made.status_code == 201
    # The sleep events' stream takes the key in its query (an EventSource sends no header).
    key = page["X-Somnid-UI"]
    assert_problem(client.get("/v1/sleep/events", headers=cookie), 401, "unauthorized")
    assert_problem(client.get(f"/v1/memories?key={key}", headers=cookie), 401, "unauthorized")
    assert client.head(f"/v1/sleep/events?key={key}", headers=cookie).status_code == 200
    same = {**page, "Origin": "http://127.0.0.1"}
    assert (
        client.patch(
            "/v1/memories/knowledge/via-cookie", json={"body": "x"}, headers=same
        ).status_code
        == 200
    )
    evil = {**page, "Origin": "http://evil.example"}
    assert_problem(client.get("/v1/memories", headers=evil), 403, "forbidden_origin")
    # Only /ui and /v1: not the metrics, not MCP; a forged cookie is nothing.
    assert_problem(client.get("/metrics", headers=page), 401, "unauthorized")
    forged = {"Cookie": "somnid_ui=" + "0" * 64, "X-Somnid-UI": key}
    assert_problem(client.get("/v1/memories", headers=forged), 401, "unauthorized")
    # The Sync tab's routes (sync is off here, and says so), a round only with the key.
    assert client.get("/v1/sync/status", headers=page).json()["enabled"] is False
    assert_problem(client.post("/v1/sync", headers=cookie), 401, "unauthorized")
    assert_problem(client.post("/v1/sync", headers=page), 503, "sync_off")
    # The cookie alone ends nothing (a form on another local port could send it).
    assert_problem(client.post("/ui/logout", headers={**cookie, **UI}), 401, "unauthorized")
    assert client.get("/v1/memories", headers=page).status_code == 200
    out = client.post("/ui/logout", headers=page)
    assert "Max-Age=0" in out.headers["set-cookie"]
    assert_problem(client.get("/v1/memories", headers=page), 401, "unauthorized")


def test_a_session_is_random_scoped_and_ends_at_logout_on_a_real_daemon(tmp_path: Path) -> None:
    """Last round's cookie was HMAC(token, constant): the same at every login, still good
    after logout, and a key to every /v1 route. Now: each login a new random session,
    refused once logged out, and never a key to the agent's tools or capture."""
    with start_daemon(tmp_path / "data") as daemon:
        token = read_token(daemon.data_dir)
        with httpx.Client(base_url=daemon.base_url, timeout=30) as client:
            first, second = login(client, token), login(client, token)
            assert first != second
            assert client.get("/v1/memories", headers=first).status_code == 200
            # Scoped to what the browser uses: not the agent's tools, capture or MCP.
            tool = client.post(
                "/v1/tools/add_intention", json={"args": {"what": "x"}}, headers=first
            )
            assert_problem(tool, 401, "unauthorized")
            capture = client.post(
                "/v1/sessions/s1/messages",
                json={"messages": [{"role": "user", "text": "hi"}]},
                headers=first,
            )
            assert_problem(capture, 401, "unauthorized")
            assert_problem(client.get("/v1/tools", headers=first), 401, "unauthorized")
            # Logout ends that session, and only that one.
            client.post("/ui/logout", headers=first)
            assert_problem(client.get("/v1/memories", headers=first), 401, "unauthorized")
            assert client.get("/v1/memories", headers=second).status_code == 200


def test_a_session_expires_idle_or_old_and_dies_with_its_token() -> None:
    now = [1000.0]
    sessions = UISessions(max_age_s=100, idle_s=30, clock=lambda: now[0])
    old, old_key = sessions.open("tok")
    idle, idle_key = sessions.open("tok")
    assert sessions.valid(old, "tok", old_key) and sessions.valid(idle, "tok", idle_key)
    now[0] += 20
    assert sessions.valid(old, "tok", old_key)  # used: kept alive
    now[0] += 20
    assert not sessions.valid(idle, "tok", idle_key)  # 40 s unused
    while sessions.valid(old, "tok", old_key):  # used every 20 s: alive until its age runs out
        now[0] += 20
    assert now[0] - 1000 >= 100
    fresh, key = sessions.open("tok")
    assert not sessions.valid(fresh, "rotated", key)  # a new token ends every session
    assert not sessions.close("nope", key) and len(sessions) == 1


def test_the_page_key_is_a_secret_of_its_own() -> None:
    # It was an HMAC of the cookie under a constant in the source: whoever held the cookie
    # (any local service the browser visited) computed it.
    sessions = UISessions()
    first, first_key = sessions.open("tok")
    second, second_key = sessions.open("tok")
    assert first_key != second_key and first_key not in (first, second)
    assert not sessions.valid(first, "tok", second_key)  # another session's key
    derived = hmac.new(first.encode(), b"somnid-ui-page-key-v1", hashlib.sha256).hexdigest()
    assert not sessions.valid(first, "tok", derived)
    assert not sessions.close(first, second_key) and sessions.valid(first, "tok", first_key)
    assert sessions.close(first, first_key) and not sessions.valid(first, "tok", first_key)
