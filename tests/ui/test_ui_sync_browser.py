"""The memory browser's Sync tab in headless Debian chromium (issue 23): two daemons on two
data dirs and a bare remote on a path; the same body line changed on both sides leaves two
conflicts on one machine; the tab shows its status and both texts of each conflict, one is
settled by taking the other machine's text, the other by keeping this machine's; "Sync now"
sends that out, and when the remote is gone it says why in red, in either language."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser import CHROMIUM, FLAGS
from tests.sync.helpers import bare_remote, machine, patch, status, sync, write
from tests.ui.test_ui_history_browser import ARTEFACTS, GREEN, RED

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/dev setup)")
BODY = "line one\nline two\nline three\n"
KITES = "memory/knowledge/kites/SKILL.md"
BOATS = "memory/knowledge/boats/SKILL.md"


@pytest.mark.timeout(300)  # two daemons and chromium: a cap for a hang on a loaded machine
def test_conflicts_are_shown_and_settled_from_the_sync_tab(tmp_path: Path) -> None:
    remote = bare_remote(tmp_path / "remote.git")
    with (
        machine(tmp_path / "a" / "data", remote) as a,
        machine(tmp_path / "b" / "data", remote) as b,
    ):
        for name in ("kites", "boats"):
            write(a, name, BODY)
        sync(a)
        sync(b)
        for daemon, who in ((a, "A"), (b, "B")):
            for name in ("kites", "boats"):
                patch(daemon, name, body=BODY.replace("line two", f"line two, as {who} says"))
        sync(a)
        assert {c["entry"] for c in sync(b)["conflicts"]} == {KITES, BOATS}
        # A receives b's merge: there the entry holds b's text and the file set aside a's own.
        b_id = status(b)["machine"]
        on_a = {c["entry"]: c for c in sync(a)["conflicts"]}
        assert {c["mergedOn"] for c in on_a.values()} == {b_id}
        assert "as B says" in on_a[KITES]["entryText"] and "as A says" in on_a[KITES]["text"]
        assert {c["mergedOn"] for c in status(b)["conflicts"]} == {None}

        with playwright.sync_playwright() as driver:
            browser = driver.chromium.launch(
                executable_path=CHROMIUM, args=[f for f in FLAGS if f != "--headless"]
            )
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(90_000)  # a cap for a hang: a busy 2-core machine is slow
            expect.set_options(timeout=90_000)
            # On a, which did not merge, no side is called "this machine's" (a probe: the
            # entry, called so, held b's text, and "keep this machine's" kept b's).
            page.goto(f"{a.base_url}/ui")
            page.fill("#token", a.token)
            page.click("#login-form button[type=submit]")
            page.click("button[data-tab=sync]")
            kites_a = page.locator(f".sync-conflict[data-entry='{KITES}']")
            expect(kites_a.locator(".merged-on")).to_contain_text(f"Merged on {b_id}")
            expect(kites_a.locator("h5").first).to_have_text(f"In the entry: {b_id}'s version")
            expect(kites_a.locator(".keep-this")).to_have_text("Keep the entry's")
            expect(kites_a.locator(".take-other")).to_have_text("Take the set-aside one")
            assert "This machine's" not in page.locator("#sync-conflicts").inner_text()
            page = browser.new_page(viewport={"width": 1280, "height": 900})  # a new context
            page.goto(f"{b.base_url}/ui")
            page.fill("#token", b.token)
            page.click("#login-form button[type=submit]")
            page.click("button[data-tab=sync]")

            def fact(key: str) -> Any:
                return page.locator(f"#sync-state dd[data-fact={key}]")

            expect(fact("sync_state")).to_have_text("idle")
            expect(fact("sync_last_pull")).to_have_text(re.compile(r"^\d{4}-\d\d-\d\d \d"))
            expect(fact("sync_ahead_behind")).to_have_text("0 to push · 0 fetched, not merged")
            expect(page.locator("#sync-off")).to_be_hidden()
            kites = page.locator(f".sync-conflict[data-entry='{KITES}']")
            boats = page.locator(f".sync-conflict[data-entry='{BOATS}']")
            expect(page.locator(".sync-conflict")).to_have_count(2)
            expect(kites.locator("h4")).to_contain_text("knowledge / kites")
            expect(kites.locator(".this-text")).to_contain_text("line two, as B says")
            expect(kites.locator(".other-text")).to_contain_text("line two, as A says")
            expect(kites.locator(".other-text .differs")).to_have_text(["line two, as A says\n"])
            ARTEFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTEFACTS / "sync-conflicts.png"), full_page=True)

            kites.locator(".take-other").click()
            expect(page.locator("#s-status")).to_have_text(re.compile("other machine's version"))
            expect(page.locator(".sync-conflict")).to_have_count(1)
            boats.locator(".keep-this").click()
            expect(page.locator("#s-status")).to_have_text(re.compile("keeps this machine's"))
            assert page.eval_on_selector("#s-status", "n => getComputedStyle(n).color") == GREEN
            expect(page.locator("#sync-conflicts")).to_have_text("No conflict.")

            # The files hold the chosen texts, and the API lists no conflict any more.
            kites_text = (b.data_dir / KITES).read_text()
            assert "as A says" in kites_text and "as B says" not in kites_text
            assert "as B says" in (b.data_dir / BOATS).read_text()
            assert status(b)["conflicts"] == []
            assert not list((b.data_dir / "memory/knowledge").rglob("*.conflict-*"))

            page.click("#sync-now")
            expect(page.locator("#s-status")).to_have_text("Synced.")

            # A remote that is gone: the round fails, and says so in red, in Chinese too.
            remote.rename(tmp_path / "moved.git")
            page.click("#sync-now")
            expect(page.locator("#s-status")).to_have_class(re.compile(r"\berror\b"))
            expect(fact("sync_state")).to_have_text("failed")
            expect(fact("sync_last_error")).to_contain_text("remote.git")
            assert page.eval_on_selector("#s-status", "n => getComputedStyle(n).color") == RED
            color = page.eval_on_selector(
                "#sync-state dd[data-fact=sync_last_error]", "n => getComputedStyle(n).color"
            )
            assert color == RED
            page.select_option("#lang", "zh")
            expect(page.locator("button[data-tab=sync]")).to_have_text("同步")
            expect(fact("sync_state")).to_have_text("失败")
            browser.close()
