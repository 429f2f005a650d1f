"""If-Match over the wire against a real daemon: an empty or malformed one is refused as
such (400), never taken for a stale ETag (412)."""

from __future__ import annotations

from tests.daemon import Daemon


def test_an_empty_or_malformed_if_match_is_refused_as_such(daemon: Daemon) -> None:
    with daemon.client() as client:
        made = client.post("/v1/memories/knowledge", json={"name": "etag", "body": "b"})
        etag = made.headers["ETag"]
        empty = client.patch(
            "/v1/memories/knowledge/etag", json={"body": "c"}, headers={"If-Match": ""}
        )
        assert empty.status_code == 400 and "empty" in empty.json()["detail"], empty.text
        bad = client.patch(
            "/v1/memories/knowledge/etag", json={"body": "c"}, headers={"If-Match": '"a", "b"'}
        )
        assert bad.status_code == 400 and "not an ETag" in bad.json()["detail"], bad.text
        for garbage in ("garbage", '"garbage"', 'W/"0123"', etag.strip('"').upper()):
            refused = client.patch(
                "/v1/memories/knowledge/etag", json={"body": "c"}, headers={"If-Match": garbage}
            )
            assert refused.status_code == 400, (garbage, refused.text)  # not 412: no ETag
        good = client.patch(
            "/v1/memories/knowledge/etag", json={"body": "c"}, headers={"If-Match": etag}
        )
        assert good.status_code == 200, good.text
        stale = client.patch(
            "/v1/memories/knowledge/etag", json={"body": "d"}, headers={"If-Match": etag}
        )
        assert stale.status_code == 412


def test_if_none_match_refuses_a_change_of_a_version_it_excludes(daemon: Daemon) -> None:
    # A probe: PUT with If-None-Match: * over an existing entry answered 200 and overwrote.
    url = "/v1/memories/knowledge/inm"
    with daemon.client() as client:
        etag = client.post("/v1/memories/knowledge", json={"name": "inm", "body": "b"}).headers[
            "ETag"
        ]
        new = {"description": "d", "body": "over"}
        for value in ("*", etag, f'"{"0" * 20}", W/{etag}'):
            refused = client.put(url, json=new, headers={"If-None-Match": value})
            assert refused.status_code == 412, (value, refused.text)
            assert refused.json()["code"] == "precondition_failed"
        assert (
            client.patch(url, json={"body": "x"}, headers={"If-None-Match": "*"}).status_code == 412
        )
        assert client.get(url).json()["body"] == "b\n"  # nothing written
        bad = client.put(url, json=new, headers={"If-None-Match": "nonsense"})
        assert bad.status_code == 400, bad.text
        other = client.put(url, json=new, headers={"If-None-Match": f'"{"0" * 20}"'})
        assert other.status_code == 200, other.text  # the version read is not excluded
        assert client.get(url).json()["body"] == "over\n"
