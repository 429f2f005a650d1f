"""A file a person's editor wrote with CRLF line ends and a byte-order mark keeps both when
somnid writes it back."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient


def test_a_crlf_file_with_a_byte_order_mark_keeps_both_when_somnid_writes_it(
    client: TestClient, data_dir: Path
) -> None:
    """A person's editor on Windows wrote the file: a change somnid makes must not turn
    every line of it into a change (nor drop the mark)."""
    folder = data_dir / "memory/knowledge/windows-note"
    folder.mkdir(parents=True)
    text = "---\nname: windows-note\ndescription: old  # kept comment\n---\n\nline one\nline two\n"
    (folder / "SKILL.md").write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    patched = client.patch(
        "/v1/memories/knowledge/windows-note", json={"description": "new", "fields": {"x": 1}}
    )
    assert patched.status_code == 200, patched.text
    data = (folder / "SKILL.md").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf---\r\n")
    assert data.count(b"\n") == data.count(b"\r\n")  # every line, none half
    assert b"description: new  # kept comment\r\n" in data
    assert data.endswith(b"\r\n\r\nline one\r\nline two\r\n")
    put = client.put(
        "/v1/memories/knowledge/windows-note", json={"description": "d", "body": "a\nb\n"}
    )
    assert put.status_code == 200, put.text
    data = (folder / "SKILL.md").read_bytes()
    assert data.endswith(b"\r\n\r\na\r\nb\r\n") and data.count(b"\n") == data.count(b"\r\n")
    read = client.get("/v1/memories/knowledge/windows-note").json()
    assert read["description"] == "d" and read["meta"]["x"] == 1
