"""The API documentation renders in a real headless chromium with no internet."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from somnid.api.docs import ASSET_FILES, ASSETS
from tests.browser import CHROMIUM, FLAGS, render, screenshot
from tests.daemon import Daemon

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def test_swagger_ui_renders_offline_with_its_authorize_button(
    daemon: Daemon, tmp_path: Path
) -> None:
    page = httpx.get(f"{daemon.base_url}/docs", timeout=5).text
    assert "cdn" not in page.lower() and f"{ASSETS}/swagger-ui-bundle.js" in page
    dom = render(f"{daemon.base_url}/docs")
    assert 'class="swagger-ui"' in dom
    assert "btn authorize" in dom and "Authorize" in dom
    assert "List memories" in dom  # readable operation summaries
    shot = screenshot(f"{daemon.base_url}/docs", tmp_path / "docs.png")
    assert shot.stat().st_size > 10_000


def test_redoc_renders_offline(daemon: Daemon) -> None:
    dom = render(f"{daemon.base_url}/redoc")
    assert "redoc-wrap" in dom or "api-content" in dom
    assert "List memories" in dom


def test_the_assets_are_public_and_packaged(daemon: Daemon) -> None:
    for name in ASSET_FILES:
        answer = httpx.get(f"{daemon.base_url}{ASSETS}/{name}", timeout=5)
        assert answer.status_code == 200 and len(answer.content) > 1000, name


def test_try_it_out_adds_an_intention_with_swagger_s_own_example(daemon: Daemon) -> None:
    """A probe: Swagger's default body for addIntention had ``"due": "string"``, refused
    with a 400, since the field said its form only in words."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM, args=[f for f in FLAGS if f != "--headless"]
        )
        page = browser.new_page()
        page.set_default_timeout(20_000)  # a busy 2-core machine is slow, not broken
        page.goto(f"{daemon.base_url}/docs")
        page.click("button.authorize")
        page.fill(".modal-ux input", daemon.token)
        page.click(".modal-ux button.authorize")
        page.click(".modal-ux button.close-modal")
        block = page.locator('div.opblock[id$="-addIntention"]').first
        block.scroll_into_view_if_needed()
        block.locator(".opblock-summary").click()
        block.locator("button.try-out__btn").click()
        sent = block.locator("textarea.body-param__text").input_value()
        with page.expect_response(lambda r: r.url.endswith("/v1/intentions")) as answer:
            block.locator("button.execute").click()
        status = answer.value.status
        browser.close()
    assert '"string"' not in sent.split('"due"', 1)[1].split(",", 1)[0], sent
    assert status == 201, sent
