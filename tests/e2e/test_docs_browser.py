"""The API documentation renders in a real headless chromium with no internet."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from somnid.api.docs import ASSET_FILES, ASSETS
from tests.browser import CHROMIUM, render, screenshot
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
