"""After a restart the status still shows the last dream: somnid reads it from its journal."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from somnid.api.app import create_app
from somnid.config import Settings
from somnid.dream.journal import JournalEntry, write_journal
from somnid.memory.clock import ManualClock
from somnid.store.layout import Layout
from tests.clients import app_client


def test_the_last_dream_comes_back_from_the_journal_after_a_restart(
    settings: Settings, clock: ManualClock, data_dir: Path
) -> None:
    with app_client(create_app(settings, clock=clock), settings) as client:
        assert client.get("/v1/sleep/status").json()["lastDream"] is None
        say = {"messages": [{"role": "user", "text": "I like green tea."}]}
        client.post("/v1/sessions/s/messages", json=say).raise_for_status()
        ran = client.post("/v1/sleep/run", json={"trigger": "manual", "wait": True}).json()
    # A richer journal, as a dream that created and updated memories writes it, after the first.
    started = dt.datetime(2026, 10, 3, 13, 0, tzinfo=dt.UTC)
    write_journal(
        Layout(data_dir),
        JournalEntry(
            trigger="idle", status="deep_sleep", started=started,
            finished=started + dt.timedelta(seconds=42), processed_logs=["2026-10-03_001"],
            created=["knowledge/green-tea"], updated=["person/ann", "knowledge/kettle"],
            archived=[], decayed=3, retired=["knowledge/old"],
            tokens={"prompt": 900, "completion": 100, "total": 1000}, llm_calls=4,
            mode="pipeline", stages=4, seconds=42.0, pending_after=0,
        ),
    )  # fmt: skip
    with app_client(create_app(settings, clock=clock), settings) as client:
        last = client.get("/v1/sleep/status").json()["lastDream"]
    assert ran["result"]["journal"].endswith("_dream_001.md")
    assert last["journal"].endswith("_dream_002.md")
    assert last["status"] == "deep_sleep" and last["trigger"] == "idle"
    assert last["started"] == "2026-10-03T13:00:00+00:00" and last["seconds"] == 42.0
    assert (last["created"], last["updated"], last["archived"]) == (1, 2, 0)
    assert (last["decayed"], last["retired"]) == (3, 1)
    assert last["processed"] == ["2026-10-03_001"]
    assert last["tokens"]["total"] == 1000 and last["llmCalls"] == 4
