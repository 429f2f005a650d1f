"""The memory browser's door: page and assets public, the token only in a POST body, a
cookie that stands for it (HttpOnly, SameSite=Strict) on /ui and /v1 only, and every
state-changing request with it carrying X-Somnid-UI from the same origin."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from somnid.api.ui_session import session_value
from tests.api.problems import assert_problem
from tests.clients import TEST_TOKEN

UI = {"X-Somnid-UI": "1"}


def cookie_of(client: TestClient) -> dict[str, str]:
    response = client.post("/ui/login", json={"token": TEST_TOKEN}, headers=UI)
    assert response.status_code == 204, response.text
    header = response.headers["set-cookie"]
    assert "HttpOnly" in header and "SameSite=Strict" in header and "Path=/" in header
    value = header.split(";")[0].split("=", 1)[1]
    assert value == session_value(TEST_TOKEN) and TEST_TOKEN not in header
    return {"Cookie": f"somnid_ui={value}"}


def test_the_page_and_its_assets_need_no_token(client: TestClient) -> None:
    client.headers.pop("Authorization")
    page = client.get("/ui")
    assert page.status_code == 200 and "<title>somnid memory</title>" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    links = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert links and all(link.startswith("/ui/assets/") for link in links)  # nothing outside
    assert client.get("/ui/assets/app.js").status_code == 200
    assert_problem(client.get("/v1/memories"), 401, "unauthorized")


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


def test_the_cookie_reads_and_writes_only_with_the_ui_header(client: TestClient) -> None:
    cookie = cookie_of(client)
    client.headers.pop("Authorization")
    client.cookies.clear()
    assert client.get("/v1/memories", headers=cookie).status_code == 200
    body = {"name": "via-cookie"}
    # A cookie alone (a cross-site form could send one) may not change anything.
    assert_problem(
        client.post("/v1/memories/knowledge", json=body, headers=cookie), 401, "unauthorized"
    )
    made = client.post("/v1/memories/knowledge", json=body, headers={**cookie, **UI})
    assert made.status_code == 201
    same = {**cookie, **UI, "Origin": "http://127.0.0.1"}
    assert (
        client.patch(
            "/v1/memories/knowledge/via-cookie", json={"body": "x"}, headers=same
        ).status_code
        == 200
    )
    evil = {**cookie, **UI, "Origin": "http://evil.example"}
    assert_problem(client.get("/v1/memories", headers=evil), 403, "forbidden_origin")
    # Only /ui and /v1: not the metrics, not MCP; a forged cookie is nothing.
    assert_problem(client.get("/metrics", headers=cookie), 401, "unauthorized")
    forged = {"Cookie": "somnid_ui=" + "0" * 64}
    assert_problem(client.get("/v1/memories", headers=forged), 401, "unauthorized")
    out = client.post("/ui/logout", headers=UI)
    assert "Max-Age=0" in out.headers["set-cookie"]
