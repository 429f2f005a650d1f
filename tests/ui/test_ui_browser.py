"""The memory browser in headless Debian chromium, driven by Playwright (never a downloaded
browser): log in, search with the score's parts, edit with a conflict, revert a dream, purge,
switch to Chinese. No request leaves loopback. Screenshots go to tests/ui/artefacts/."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from somnid.api.app import create_app
from somnid.config import Settings
from tests.browser import CHROMIUM, FLAGS
from tests.clients import TEST_TOKEN
from tests.dream.pipeline.fakes import ScriptedJSON, by_stage, extraction
from tests.dream.pipeline.test_pipeline import BOSTON
from tests.ui.server import serve

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/dev setup)")
ARTEFACTS = Path(__file__).parent / "artefacts"
SAID = dt.datetime(2026, 11, 30, 18, 30, tzinfo=dt.UTC)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, httpx.Client, Any]]:
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        dream={"by_speaker": False},
        token=TEST_TOKEN,
        history={"batch_window_s": 0.1},
    )
    app = create_app(settings)
    with (
        serve(app) as base,
        httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {TEST_TOKEN}"}, timeout=30
        ) as api,
    ):
        yield base, api, app


def seed(base: str, api: httpx.Client, app: Any) -> str:
    """Two entries, an intention, and one dream by a scripted model; the dream's id."""
    api.post("/v1/memories/knowledge", json={"name": "kites", "body": "Mira likes kites.\n"})
    api.post("/v1/intentions", json={"what": "Buy Mira a kite string", "due": "2026-12-24"})
    messages = [
        {
            "role": "user",
            "text": text,
            "speaker": who,
            "timestamp": (SAID + dt.timedelta(minutes=i)).isoformat(),
        }
        for i, (who, text) in enumerate(BOSTON)
    ]
    assert api.post("/v1/sessions/chat-1/messages", json={"messages": messages}).status_code == 200
    api.post("/v1/sessions/chat-1/close")
    api.get("/v1/history")
    app.state.runtime.dreamer.backend = ScriptedJSON(
        by_stage(
            lambda r: extraction(
                ("event", ["L1", "L3"], "Calvin met Dana at the harbour in Boston yesterday "
                 "and bought a blue kite for his niece Mira."),
                ("preference", ["L4"], "Dana prefers green kites."),
            )
        )
    )  # fmt: skip
    dream = api.post("/v1/sleep/run", json={"trigger": "test", "wait": True}).json()["result"]
    assert dream["status"] == "deep_sleep", dream
    return Path(dream["journal"]).stem


def test_the_memory_browser_end_to_end(site: tuple[str, httpx.Client, Any]) -> None:
    base, api, app = site
    dream_id = seed(base, api, app)
    ARTEFACTS.mkdir(exist_ok=True)
    outside: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM, args=[f for f in FLAGS if f != "--headless"]
        )
        page = browser.new_page(viewport={"width": 1280, "height": 820})
        page.set_default_timeout(20_000)  # a busy 2-core machine is slow, not broken
        expect.set_options(timeout=20_000)
        page.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
        page.goto(f"{base}/ui")

        # Log in: the token goes in a POST body, never in a URL.
        page.fill("#token", TEST_TOKEN)
        page.click("#login-form button[type=submit]")
        page.wait_for_selector("#tabs:not([hidden])")
        assert TEST_TOKEN not in page.url
        page.wait_for_selector("#list li[data-name=kites]")

        # A file broken by hand is in no listing: the browser names it, and why.
        broken = app.state.runtime.layout.root / "memory/knowledge/torn/SKILL.md"
        broken.parent.mkdir(parents=True)
        broken.write_text("---\nname: torn\ndescription: [unclosed\n---\n\nhalf saved\n")
        page.select_option("#scope", "archived")
        page.select_option("#scope", "live")
        page.wait_for_selector("#broken li[data-path='memory/knowledge/torn/SKILL.md']")
        expect(page.locator("#list li[data-name=torn]")).to_have_count(0)
        broken.unlink()
        broken.parent.rmdir()

        # Search, with the score's parts.
        page.click("button[data-tab=search]")
        page.fill("#q", "green kites")
        page.click("#search-form button[type=submit]")
        page.wait_for_selector("#results li .part")
        assert "What is known of Dana" in page.inner_text("#results")  # her person entry
        page.screenshot(path=str(ARTEFACTS / "search.png"))

        # Edit with a conflict: the entry changes behind the browser's back.
        page.click("button[data-tab=memories]")
        page.click("#list li[data-name=kites]")
        page.wait_for_selector("#entry:not([hidden])")
        api.patch("/v1/memories/knowledge/kites", json={"body": "Mira likes red kites.\n"})
        page.fill("#e-body", "Mira likes blue kites.\n")
        page.click("#save")
        page.wait_for_selector("#conflict:not([hidden])")
        page.screenshot(path=str(ARTEFACTS / "conflict.png"))
        page.once("dialog", lambda box: box.accept())  # the typed text is let go, when asked
        page.click("#reload")
        expect(page.locator("#e-body")).to_have_value(re.compile("red"))
        page.fill("#e-body", "Mira likes red and blue kites.\n")
        page.click("#save")
        expect(page.locator("#e-status")).to_have_text("Saved.")
        got = api.get("/v1/memories/knowledge/kites").json()
        assert got["body"] == "Mira likes red and blue kites.\n"

        # A Save sends only what was changed: the description was shown in a one-line input,
        # which dropped its line break, and a body's CRLF came back LF (a probe).
        lines = {"name": "lines", "description": "first line\nsecond line"}
        lines["body"] = "one\r\ntwo\r\n"
        assert api.post("/v1/memories/knowledge", json=lines).status_code == 201
        page.select_option("#scope", "archived")
        page.select_option("#scope", "live")
        page.click("#list li[data-name=lines]")
        page.wait_for_selector("#entry:not([hidden])")
        expect(page.locator("#e-desc")).to_have_value("first line\nsecond line")
        page.fill("#e-fields", '{"topic": "lines"}')
        page.click("#save")
        expect(page.locator("#e-status")).to_have_text("Saved.")
        got = api.get("/v1/memories/knowledge/lines").json()
        assert (got["description"], got["body"]) == (lines["description"], lines["body"])
        assert got["meta"]["topic"] == "lines"
        page.fill("#e-desc", "first line\nthird line")
        page.click("#save")
        expect(page.locator("#e-status")).to_have_text("Saved.")
        got = api.get("/v1/memories/knowledge/lines").json()
        assert (got["description"], got["body"]) == ("first line\nthird line", lines["body"])
        archived = api.post("/v1/memories/knowledge/lines/archive", json={})
        assert archived.status_code == 200, archived.text

        # The agenda.
        page.click("button[data-tab=intentions]")
        page.wait_for_selector("#agenda li strong")
        assert "Buy Mira a kite string" in page.inner_text("#agenda")

        # The dream journal: its diff, and revert.
        page.click("button[data-tab=dreams]")
        page.click(f"#dreams li[data-dream='{dream_id}']")
        page.wait_for_selector("#diffs pre.diff .add")
        assert "Dana prefers green kites" in page.inner_text("#diffs")
        page.screenshot(path=str(ARTEFACTS / "dream.png"))
        page.click("#revert")
        expect(page.locator("#d-status")).to_have_text(re.compile("^Reverted"))
        names = {
            item["name"]
            for item in api.get("/v1/memories", params={"kind": "knowledge"}).json()["items"]
        }
        assert names == {"kites"}  # the dream's knowledge is gone, the edit stays
        assert (
            api.get("/v1/memories/knowledge/kites").json()["body"]
            == "Mira likes red and blue kites.\n"
        )
        # Undone: marked in the list and in the dream, with no button to undo it again.
        expect(page.locator("#revert")).to_be_hidden()
        by = re.compile("^reverted by [0-9a-f]{12}$")
        expect(page.locator(f"#dreams li[data-dream='{dream_id}'] .reverted-by")).to_have_text(by)
        page.click(f"#dreams li[data-dream='{dream_id}']")
        expect(page.locator("#d-status")).to_have_text(by)
        expect(page.locator("#revert")).to_be_hidden()

        # Sleep status, live from the SSE stream: another sleep is seen to end (it dreams the
        # log again: reverting the dream made it pending).
        expect(page.locator("#sleep")).to_have_text("awake")
        api.post("/v1/sleep/run", json={"trigger": "test", "wait": True})
        expect(page.locator("#sleep")).to_have_text(re.compile(r"^awake · deep_sleep"))

        # Purge, from history too.
        page.click("button[data-tab=memories]")
        page.click("#list li[data-name=kites]")
        page.wait_for_selector("#entry:not([hidden])")
        page.fill("#purge-confirm", "kites")
        page.check("#purge-history")
        page.click("#purge")
        expect(page.locator("#notice")).to_have_text("Purged.")
        assert api.get("/v1/memories/knowledge/kites").status_code == 404
        assert "Mira likes" not in api.get("/v1/history", params={"limit": 200}).text

        # Chinese.
        page.select_option("#lang", "zh")
        assert page.inner_text("button[data-tab=memories]") == "记忆"
        expect(page.locator("#sleep")).to_have_text(re.compile("^清醒"))
        page.click("button[data-tab=dreams]")
        page.click(f"#dreams li[data-dream='{dream_id}']")
        page.wait_for_selector("#diffs pre.diff")
        page.screenshot(path=str(ARTEFACTS / "dream-zh.png"))
        browser.close()
    assert outside == []
