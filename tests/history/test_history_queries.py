"""History queries git cannot take (an offset it would wrap round, a NUL in a path) are
refused (422) before they reach it. Against a real daemon."""

from __future__ import annotations

from tests.daemon import Daemon


def test_a_history_query_git_cannot_take_is_refused(daemon: Daemon) -> None:
    with daemon.client() as client:
        made = client.post("/v1/memories/knowledge", json={"name": "h", "body": "x"})
        assert made.status_code == 201
        largest = client.get("/v1/history", params={"offset": 2**31 - 1})
        assert largest.status_code == 200 and largest.json()["items"] == [], largest.text
        # It wrapped round in git and listed the newest commits (a long fuzz run got a 500).
        wrapped = client.get("/v1/history", params={"offset": 278066836717544416})
        assert wrapped.status_code == 422, wrapped.text
        nul = client.get("/v1/history", params={"path": "memory/a\x00b", "dreams": "true"})
        assert nul.status_code == 422, nul.text  # it reached git: 500
        assert client.get("/v1/history", params={"path": "memory/knowledge/h/SKILL.md"}).is_success
