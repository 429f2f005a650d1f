"""The docs' and the memory browser's packaged files, sent from memory (no file held open
while a slow client takes its answer)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from somnid.api.docs import assets_dir


def test_an_asset_is_whole_and_revalidates_with_its_etag(client: TestClient) -> None:
    path = "/docs/assets/swagger-ui-bundle.js"
    first = client.get(path)
    assert first.status_code == 200
    assert first.content == (assets_dir() / "swagger-ui-bundle.js").read_bytes()
    assert first.headers["content-length"] == str(len(first.content))
    assert "javascript" in first.headers["content-type"]
    assert first.headers["accept-ranges"] == "none"
    again = client.get(path, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 304
    assert again.content == b""
    head = client.head(path)
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-length"] == first.headers["content-length"]
    assert client.get("/docs/assets/nope.js").status_code == 404


def test_the_memory_browser_assets_come_the_same_way(client: TestClient) -> None:
    answer = client.get("/ui/assets/app.js")
    assert answer.status_code == 200
    assert answer.headers["accept-ranges"] == "none"
    assert len(answer.content) == int(answer.headers["content-length"]) > 0
