"""A decay pass writes only what decays: with nothing due it read, rendered and compared
every file (a probe: 17-19 s for 2,300 entries, every pass), and it still retires an entry
whose score a person lowered by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from somnid.memory.clock import ManualClock


def test_a_pass_with_nothing_to_decay_writes_nothing_and_still_retires(
    client: TestClient, clock: ManualClock, data_dir: Path
) -> None:
    today = clock.now().isoformat()
    for name, score in (("kept", 0.5), ("faded", 0.1)):
        body = {"name": name, "description": name, "fields": {"last_decay": today}}
        assert client.post("/v1/memories/knowledge", json=body).status_code == 201
        if name == "faded":  # lowered by hand, after the create set its own score
            lowered = {"fields": {"score": score}}
            patched = client.patch(f"/v1/memories/knowledge/{name}", json=lowered)
            assert patched.status_code == 200, patched.text
    kept = data_dir / "memory/knowledge/kept/SKILL.md"
    before = (kept.read_bytes(), kept.stat().st_mtime_ns)
    runtime: Any = client.app.state.runtime  # type: ignore[attr-defined]
    written: list[str] = []
    mutate = runtime.memories.mutate

    async def counted(kind: Any, name: str, *args: Any, **kwargs: Any) -> Any:
        written.append(name)
        return await mutate(kind, name, *args, **kwargs)

    runtime.memories.mutate = counted
    report = client.post("/v1/maintenance/decay").json()
    assert written == []  # read, rendered and compared, each one, before
    assert report["decayed"] == []
    assert [change["name"] for change in report["retired"]] == ["faded"]
    assert (kept.read_bytes(), kept.stat().st_mtime_ns) == before
    assert (data_dir / "memory/archived/faded/SKILL.md").is_file()
