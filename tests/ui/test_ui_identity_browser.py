"""The memory browser against a real daemon, in headless Debian chromium (issues 26, 27).

Identity changes listed for review: a dream (a scripted host over the bridge) writes what
the user said of themselves into their profile; the Identity tab lists it, with the dream
that made it and its diff, beside a change made through the API; one click reverts the
dream's change and the profile is gone again. The dream's commit names the profile.

A purge from history says how long it will take while it runs (held at its first rebuilt
commit by a git wrapper on the daemon's PATH, so the test never races it)."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.browser import CHROMIUM, FLAGS
from tests.daemon import start_daemon
from tests.dream.test_profile_gate_bridge import _dream
from tests.history.helpers import wait_for
from tests.history.test_purge_beside_reads import held_git, release
from tests.ui.test_ui_history_browser import ARTEFACTS, GREEN

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/dev setup)")


def test_a_dreams_profile_change_is_listed_and_reverted_in_one_click(tmp_path: Path) -> None:
    bin_dir, fifo, waiting = held_git(tmp_path / "gate")
    env = (
        ("SOMNID_DREAM__MODE", "agentic"),
        ("SOMNID_HISTORY__BATCH_WINDOW_S", "0.1"),
        ("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}"),
    )
    turns = [
        {"role": "user", "text": "I moved to Lisbon last month, loving it.", "userId": "ann"},
        {"role": "agent", "text": "Lisbon, lovely. Noted."},
    ]
    with start_daemon(tmp_path / "data", *env) as daemon, daemon.client() as api:
        done = asyncio.run(_dream(daemon, turns, "- The user moved to Lisbon"))
        result = done["result"]
        assert result["candidates"].get("profile") == 1, result
        dream_id = Path(result["journal"]).stem
        profile = daemon.data_dir / "memory/users/ann/about_user.md"
        assert "The user moved to Lisbon" in profile.read_text()
        created = api.post("/v1/memories/profile", json={"name": "about_me", "body": "- helper\n"})
        assert created.status_code == 201, created.text
        vpn = api.post("/v1/memories/knowledge", json={"name": "old-vpn", "body": "port 1194\n"})
        assert vpn.status_code == 201, vpn.text

        # The API: the dream's change, its id, its diff; its commit names the profile.
        [dreamt] = api.get("/v1/history/identity", params={"dreams": "true"}).json()["items"]
        assert dreamt["commit"]["dreamId"] == dream_id and dreamt["commit"]["source"] == "dream"
        message = dreamt["commit"]["message"]
        assert "1 profiles changed" in message and "Profiles changed: profile/ann" in message
        [entry] = dreamt["entries"]
        assert entry["change"]["name"] == "ann" and "+- The user moved to Lisbon" in entry["diff"]
        assert api.get("/v1/history/identity").json()["total"] == 2

        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=CHROMIUM, args=[f for f in FLAGS if f != "--headless"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(30_000)  # a busy 2-core machine is slow, not broken
            expect.set_options(timeout=30_000)
            page.goto(f"{daemon.base_url}/ui")
            page.fill("#token", daemon.token)
            page.click("#login-form button[type=submit]")
            page.click("button[data-tab=identity]")
            changes = page.locator(".identity-change")
            expect(changes).to_have_count(2)
            by_dream = page.locator(".identity-change[data-source=dream]")
            expect(by_dream.locator("h4")).to_contain_text(dream_id)
            expect(by_dream.locator("h5")).to_have_text("profile / ann (added)")
            expect(by_dream.locator("pre.diff .add")).to_contain_text(
                ["+- The user moved to Lisbon"]
            )
            expect(page.locator(".identity-change[data-source=api] h5")).to_have_text(
                "profile / about_me (added)"
            )
            ARTEFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTEFACTS / "identity-changes.png"), full_page=True)

            by_dream.locator(".revert-identity").click()
            expect(page.locator("#i-status")).to_have_text(re.compile("^Reverted: the profile"))
            assert page.eval_on_selector("#i-status", "n => getComputedStyle(n).color") == GREEN
            assert not profile.exists()  # the dream created it: reverted, it is gone
            expect(changes).to_have_count(3)
            expect(changes.first).to_have_attribute("data-source", "ui")  # the revert
            expect(by_dream.locator(".reverted")).to_contain_text("reverted by")
            expect(by_dream.locator(".revert-identity")).to_have_count(0)

            page.check("#identity-dreams")
            expect(changes).to_have_count(1)

            # A purge from history, held at its first rebuilt commit: it says how long.
            page.click("button[data-tab=memories]")
            page.click("#list li[data-name=old-vpn]")
            page.fill("#purge-confirm", "old-vpn")
            page.check("#purge-history")
            try:
                page.click("#purge")
                expect(page.locator("#e-status")).to_have_text(
                    re.compile(r"^Rewriting \d+ commits of history, about \d+ s \(\d+ done\)")
                )
                # The page may say so a moment before the held git has started: wait for it.
                wait_for(waiting.exists)
            finally:
                release(fifo)
            expect(page.locator("#notice")).to_have_text("Purged.")
            browser.close()

    last = subprocess.run(
        ["git", "-C", str(tmp_path / "data"), "log", "-1", "--format=%B"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert f"Reverts: {dreamt['commit']['id']}" in last
