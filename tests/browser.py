"""A real headless browser for tests: Debian's chromium (``scripts/dev setup`` installs it).

Reusable for any page somnid serves (the API docs today; a plugin web UI or a memory browser
later): :func:`render` loads a URL with no network but loopback, lets its scripts run for a
bounded time, and returns the DOM as the scripts left it; :func:`screenshot` saves a PNG.
Each call starts chromium with a fresh profile and no background traffic, and ends it.

    from tests.browser import CHROMIUM, render
    pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium")
    dom = render("http://127.0.0.1:7373/docs")
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM: str | None = shutil.which("chromium") or (
    "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    # Nothing but loopback: a page that needs the internet (a CDN) renders blank here.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=127.0.0.1;localhost",
)


class BrowserError(RuntimeError):
    pass


def _run(args: list[str], url: str, budget_ms: int, timeout: float) -> str:
    if CHROMIUM is None:
        raise BrowserError("chromium is not installed (scripts/dev setup installs it)")
    with tempfile.TemporaryDirectory(prefix="somnid-chromium-") as profile:
        command = [
            CHROMIUM,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={budget_ms}",
            *args,
            url,
        ]
        env = {**os.environ, "HOME": profile}
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                timeout=timeout,
                env=env,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BrowserError(f"chromium took longer than {timeout} s on {url}") from exc
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace")[-2000:]
        raise BrowserError(f"chromium exited {done.returncode} on {url}: {tail}")
    return done.stdout.decode("utf-8", errors="replace")


def render(url: str, *, budget_ms: int = 8000, timeout: float = 60.0) -> str:
    """The DOM of ``url`` after its scripts ran for up to ``budget_ms`` of virtual time."""
    return _run(["--dump-dom"], url, budget_ms, timeout)


def screenshot(
    url: str, path: Path, *, size: tuple[int, int] = (1280, 900), budget_ms: int = 8000
) -> Path:
    """A PNG of ``url`` as rendered, saved at ``path``."""
    _run([f"--screenshot={path}", f"--window-size={size[0]},{size[1]}"], url, budget_ms, 60.0)
    if not path.is_file():
        raise BrowserError(f"chromium wrote no screenshot of {url}")
    return path
