"""The memory browser in headless Debian chromium (Playwright, never a downloaded browser): an
entry's history with the diffs of an API edit and a hand edit, the hand edit reverted, a
revert over a later change refused in red; and the small things a new user met: the tab bar
on the login page, a stale "Saved." under a 412, purge by the name as typed at creation, the
"also from history" box, kind names in Chinese, the note when Chinese has no font."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from somnid.api.app import create_app
from somnid.config import Settings
from tests.browser import CHROMIUM, FLAGS
from tests.clients import TEST_TOKEN
from tests.daemon import free_port
from tests.history.helpers import wait_for
from tests.ui.server import serve

playwright = pytest.importorskip("playwright.sync_api")
expect = playwright.expect
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium (scripts/dev setup)")
ARTEFACTS = Path(__file__).parent / "artefacts"
RED = "rgb(180, 35, 24)"  # --bad in app.css
GREEN = "rgb(18, 122, 58)"  # --ok


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[str, httpx.Client, Path]]:
    settings = Settings(
        data_dir=tmp_path / "data",
        timezone="UTC",
        embed={"provider": "off"},
        token=TEST_TOKEN,
        history={"batch_window_s": 0.1},
    )
    with (
        serve(create_app(settings)) as base,
        httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {TEST_TOKEN}"}, timeout=30
        ) as api,
    ):
        yield base, api, settings.data_dir


@pytest.fixture
def page(site: tuple[str, httpx.Client, Path]) -> Iterator[Any]:
    base = site[0]
    outside: list[str] = []
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM, args=[f for f in FLAGS if f != "--headless"]
        )
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.set_default_timeout(30_000)  # a busy 2-core machine is slow, not broken
        expect.set_options(timeout=30_000)
        tab.on("request", lambda r: None if r.url.startswith(base) else outside.append(r.url))
        tab.goto(f"{base}/ui")
        yield tab
        browser.close()
    assert outside == []


def log_in(page: Any) -> None:
    page.fill("#token", TEST_TOKEN)
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#tabs:not([hidden])")


def colour(page: Any, selector: str) -> str:
    value: str = page.eval_on_selector(selector, "node => getComputedStyle(node).color")
    return value


def test_an_entrys_history_shows_both_diffs_and_reverts_the_hand_edit(
    site: tuple[str, httpx.Client, Path], page: Any
) -> None:
    _, api, data = site
    assert api.post("/v1/memories/knowledge", json={"name": "vpn", "body": "port 1194\n"})
    api.get("/v1/history")  # committed, so the edit below is a commit of its own
    assert api.patch("/v1/memories/knowledge/vpn", json={"body": "port 443\n"}).is_success
    api.get("/v1/history")
    path = data / "memory/knowledge/vpn/SKILL.md"
    as_api_wrote = path.read_bytes()
    path.write_text(path.read_text().replace("port 443", "port 8443, by hand"))
    wait_for(
        lambda: api.get("/v1/history", params={"limit": 1}).json()["items"][0]["source"] == "hand",
        timeout=120,
    )

    log_in(page)
    page.click("#list li[data-name=vpn]")
    expect(page.locator("#e-body")).to_have_value(re.compile("8443"))
    page.click("#show-history")
    hand = page.locator(".change[data-source=hand]")
    edits = page.locator(".change[data-source=api]")
    expect(hand.locator("pre.diff .add")).to_have_text("+port 8443, by hand")
    expect(hand.locator("pre.diff .del")).to_have_text("-port 443")
    expect(edits).to_have_count(2)  # the edit and the create, newest first
    expect(edits.first.locator("pre.diff .add")).to_have_text("+port 443")
    ARTEFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / "entry-history.png"), full_page=True)

    hand.locator(".revert-change").click()
    expect(page.locator("#h-status")).to_have_text(re.compile("^Reverted"))
    assert colour(page, "#h-status") == GREEN
    assert path.read_bytes() == as_api_wrote
    expect(page.locator("#e-body")).to_have_value("port 443\n")
    expect(page.locator(".change[data-source=ui]")).to_have_count(1)  # the revert, listed

    # The API edit has later changes (the hand edit, its revert): refused, and in red.
    page.locator(".change[data-source=api]").first.locator(".revert-change").click()
    expect(page.locator("#h-status")).to_have_text(re.compile("^Refused.*knowledge/vpn"))
    assert colour(page, "#h-status") == RED
    assert path.read_bytes() == as_api_wrote


def test_the_small_things_a_new_user_met(site: tuple[str, httpx.Client, Path], page: Any) -> None:
    _, api, _ = site
    api.post("/v1/memories/knowledge", json={"name": "old vpn", "body": "port 1194\n"})
    api.post("/v1/memories/knowledge", json={"name": "tea", "body": "green\n"})

    # The login page shows no tabs.
    expect(page.locator("#login")).to_be_visible()
    expect(page.locator("#tabs")).to_be_hidden()
    log_in(page)
    expect(page.locator("#tabs")).to_be_visible()

    # A stale "Saved." is gone under the 412 notice.
    page.click("#list li[data-name=tea]")
    page.fill("#e-body", "green tea\n")
    page.click("#save")
    expect(page.locator("#e-status")).to_have_text("Saved.")
    assert colour(page, "#e-status") == GREEN
    api.patch("/v1/memories/knowledge/tea", json={"body": "black\n"})
    page.fill("#e-body", "oolong\n")
    page.click("#save")
    expect(page.locator("#conflict")).to_be_visible()
    expect(page.locator("#e-status")).to_have_text("")

    # The "also from history" box does not stay ticked for the next entry.
    page.check("#purge-history")
    page.once("dialog", lambda box: box.accept())  # "oolong" is not saved: asked, let go
    page.click("#list li[data-name=old-vpn]")
    expect(page.locator("#e-title")).to_have_text("knowledge / old-vpn")
    expect(page.locator("#purge-history")).not_to_be_checked()

    # An error is red, not the green of success; the name as typed at creation purges.
    page.fill("#purge-confirm", "old")
    page.click("#purge")
    expect(page.locator("#e-status")).to_have_text(re.compile("repeat its name"))
    assert colour(page, "#e-status") == RED
    page.fill("#purge-confirm", "old vpn")
    page.click("#purge")
    expect(page.locator("#notice")).to_have_text("Purged.")
    assert colour(page, "#notice") == GREEN
    assert api.get("/v1/memories/knowledge/old-vpn").status_code == 404

    # Chinese: kind names too, and a note when the machine has no font for it.
    expect(page.locator("#cjk-note")).to_be_hidden()
    page.click("#list li[data-name=tea]")
    page.select_option("#lang", "zh")
    expect(page.locator("#kind option[value=knowledge]")).to_have_text("知识")
    expect(page.locator("#kind option[value=episode]")).to_have_text("经历")
    expect(page.locator("#e-title")).to_have_text("知识 / tea")
    note = page.locator("#cjk-note")
    (expect(note).to_be_visible if not cjk_font() else expect(note).to_be_hidden)()
    assert "fonts-noto-cjk" in note.inner_text()
    page.screenshot(path=str(ARTEFACTS / "zh-fonts.png"))
    page.click("button[data-tab=search]")
    page.fill("#q", "tea")
    page.click("#search-form button[type=submit]")
    expect(page.locator("#results li").first).to_contain_text("tea · 知识 ·")
    page.select_option("#lang", "en")
    expect(note).to_be_hidden()


def cjk_font() -> bool:
    """Whether fontconfig knows a font for Chinese (what chromium falls back to)."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return False
    out = subprocess.run([fc_list, ":lang=zh"], capture_output=True, text=True, check=False)
    return bool(out.stdout.strip())


def test_a_purge_takes_only_what_the_page_shows(
    site: tuple[str, httpx.Client, Path], page: Any
) -> None:
    # From the archived view a purge deleted the live entry of the same name too, and from
    # the live view it purged text written after the page opened the entry, unseen.
    _, api, _ = site
    api.post("/v1/memories/knowledge", json={"name": "kites", "body": "old kites\n"})
    api.post("/v1/memories/knowledge/kites/archive")
    api.post("/v1/memories/knowledge", json={"name": "kites", "body": "Live kites, important.\n"})
    api.post("/v1/memories/knowledge", json={"name": "tea", "body": "green\n"})
    log_in(page)
    page.select_option("#scope", "archived")
    page.click("#list li[data-name=kites]")
    expect(page.locator("#e-body")).to_have_value("old kites\n")
    expect(page.locator("#save")).to_be_hidden()  # a save went to the live namesake
    page.fill("#purge-confirm", "kites")
    page.click("#purge")
    expect(page.locator("#e-status")).to_have_text(re.compile("A live entry has this name"))
    assert "important" in api.get("/v1/memories/knowledge/kites").json()["body"]
    page.select_option("#scope", "live")
    page.click("#list li[data-name=tea]")
    expect(page.locator("#save")).to_be_visible()
    api.patch("/v1/memories/knowledge/tea", json={"body": "written by a dream meanwhile\n"})
    page.fill("#purge-confirm", "tea")
    page.click("#purge")
    expect(page.locator("#conflict")).to_be_visible()
    assert api.get("/v1/memories/knowledge/tea").status_code == 200
    page.click("#reload")
    page.fill("#purge-confirm", "tea")
    page.click("#purge")
    expect(page.locator("#notice")).to_have_text("Purged.")
    assert api.get("/v1/memories/knowledge/tea").status_code == 404
    # A search the daemon refuses says why (it showed nothing at all).
    page.click("button[data-tab=search]")
    page.fill("#q", "x" * 2100)
    page.click("#search-form button[type=submit]")
    expect(page.locator("#results li.error")).to_be_visible()


def test_the_cookie_alone_opens_nothing_and_hidden_tabs_let_go_of_their_stream(
    site: tuple[str, httpx.Client, Path], page: Any
) -> None:
    base, _, _ = site
    log_in(page)
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    with httpx.Client(base_url=base, timeout=30) as other:  # a local service replaying it
        replayed = other.get(
            "/v1/memories", headers={"Cookie": f"somnid_ui={cookies['somnid_ui']}"}
        )
        assert replayed.status_code == 401
    key = page.evaluate("localStorage.getItem('somnid-ui-key')")
    assert key and len(key) >= 40
    wait_for(lambda: page.evaluate("events !== null"))
    page.evaluate("Object.defineProperty(document, 'hidden', {value: true, configurable: true})")
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    assert page.evaluate("events === null")
    page.evaluate("Object.defineProperty(document, 'hidden', {value: false, configurable: true})")
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")
    wait_for(lambda: page.evaluate("events !== null"))  # opened again once the status is read
    page.click("#logout")
    expect(page.locator("#login")).to_be_visible()
    wait_for(lambda: page.evaluate("localStorage.getItem('somnid-ui-key')") is None)


def test_the_archive_and_a_long_list_show_past_500_live_entries(
    site: tuple[str, httpx.Client, Path], page: Any
) -> None:
    # Asked for with the live ones, the archived came after 500 of them: "Nothing here."
    # And the live list stopped at 500 without a word.
    _, api, data_dir = site
    api.post("/v1/memories/knowledge", json={"name": "kites", "body": "old kites\n"})
    assert api.post("/v1/memories/knowledge/kites/archive").status_code == 200
    folder = data_dir / "memory/knowledge"
    for n in range(501):
        (folder / f"n{n:03d}").mkdir()
        (folder / f"n{n:03d}/SKILL.md").write_text(f"---\ndescription: entry {n}\n---\n\nx\n")
    only = api.get("/v1/memories", params={"archivedOnly": "true", "limit": 2}).json()
    assert [item["name"] for item in only["items"]] == ["kites"] and only["total"] == 1
    log_in(page)
    expect(page.locator("#list li.more")).to_have_text(
        "The first 500 of 501: type a filter to find the others."
    )
    page.select_option("#scope", "archived")
    expect(page.locator("#list li[data-name=kites]")).to_be_visible()


def test_what_a_probe_met_without_a_mouse_and_with_files_gone(
    site: tuple[str, httpx.Client, Path], page: Any
) -> None:
    """A probe (stop 60): no entry could be opened from the keyboard; an entry deleted or
    broken by hand did nothing when clicked while the editor went on showing another; a save
    with "name" taken out of the fields was refused; a phone's width hid the tabs."""
    _, api, data = site
    for name in ("alpha", "ghost"):
        api.post("/v1/memories/knowledge", json={"name": name, "body": f"{name} body\n"})
    log_in(page)

    # Tab reaches the list, Enter opens the entry.
    page.wait_for_selector("#list li[data-name=alpha]")
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.dataset.name") == "alpha":
            break
    page.keyboard.press("Enter")
    expect(page.locator("#e-title")).to_have_text("knowledge / alpha")

    # Fields without "name" (the page shows it no more): the save goes through.
    page.fill("#e-fields", '{"color": "green"}')
    page.click("#save")
    expect(page.locator("#e-status")).to_have_text("Saved.")
    assert "color: green" in (data / "memory/knowledge/alpha/SKILL.md").read_text()

    # An entry removed by hand since the list was read: said, and no other entry shown.
    shutil.rmtree(data / "memory/knowledge/ghost")
    page.click("#list li[data-name=ghost]")
    expect(page.locator("#notice")).to_contain_text("no knowledge named 'ghost'")
    expect(page.locator("#entry")).to_be_hidden()

    # A link to a tab there is not shows the memories, not a blank page.
    page.goto(page.url.split("#")[0] + "#bogus")
    page.reload()
    expect(page.locator("#view-memories")).to_be_visible()

    # A phone's width: the header wraps, every tab and Log out stay on screen.
    page.set_viewport_size({"width": 375, "height": 800})
    for selector in ("#tabs button:last-of-type", "#logout"):
        box = page.locator(selector).bounding_box()
        assert box is not None and box["x"] + box["width"] <= 375, (selector, box)


def test_text_typed_and_not_saved_is_not_dropped_without_asking(
    site: tuple[str, httpx.Client, Path], page: Any
) -> None:
    """A probe (stop 60): text typed in the editor was dropped without a word when another
    entry opened, on reload (after a 412) and when a change was reverted."""
    _, api, data = site
    api.post("/v1/memories/knowledge", json={"name": "tea", "body": "green\n"})
    api.post("/v1/memories/knowledge", json={"name": "vpn", "body": "port 1194\n"})
    asked: list[str] = []
    answer = {"accept": False}

    def dialog(box: Any) -> None:
        asked.append(box.message)
        box.accept() if answer["accept"] else box.dismiss()

    page.on("dialog", dialog)
    log_in(page)
    page.click("#list li[data-name=tea]")
    expect(page.locator("#e-body")).to_have_value("green\n")
    page.fill("#e-body", "green, and oolong on Sundays\n")

    page.click("#list li[data-name=vpn]")  # asked, and kept on "cancel"
    expect(page.locator("#e-title")).to_have_text(re.compile("/ tea$"))
    expect(page.locator("#e-body")).to_have_value("green, and oolong on Sundays\n")
    assert len(asked) == 1 and "not saved" in asked[0], asked

    answer["accept"] = True  # and this time let it go
    page.click("#list li[data-name=vpn]")
    expect(page.locator("#e-body")).to_have_value("port 1194\n")
    assert len(asked) == 2
    page.click("#list li[data-name=tea]")  # nothing typed in vpn: nothing to ask
    expect(page.locator("#e-body")).to_have_value("green\n")
    assert len(asked) == 2, asked

    page.fill("#e-body", "green tea\n")
    page.click("#save")
    expect(page.locator("#e-status")).to_have_text("Saved.")
    page.click("#list li[data-name=vpn]")  # saved: nothing to ask
    expect(page.locator("#e-body")).to_have_value("port 1194\n")
    assert len(asked) == 2, asked
    assert api.get("/v1/memories/knowledge/tea").json()["body"] == "green tea\n"

    # A description with a line break (a folded one written by hand) shows in a one-line
    # box without it: nothing typed, nothing to ask.
    folded = data / "memory/knowledge/folded/SKILL.md"
    folded.parent.mkdir()
    folded.write_text("---\nname: folded\ndescription: >\n  two\n  lines\n---\nbody\r\n")
    page.select_option("#kind", "knowledge")  # the list again, with it
    page.click("#list li[data-name=folded]")
    expect(page.locator("#e-title")).to_have_text(re.compile("/ folded$"))
    page.click("#list li[data-name=vpn]")
    expect(page.locator("#e-body")).to_have_value("port 1194\n")
    assert len(asked) == 2, asked


def test_after_a_restart_the_page_asks_for_the_login_again(tmp_path: Path) -> None:
    """A probe (stop 60): a restart ends the browser's session, and the sleep badge went on
    showing the state before it (its event stream refused, never asked again) until the
    person happened to click something."""
    settings = Settings(
        data_dir=tmp_path / "data", timezone="UTC", embed={"provider": "off"}, token=TEST_TOKEN
    )
    port = free_port()
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=CHROMIUM, args=[f for f in FLAGS if f != "--headless"]
        )
        tab = browser.new_page(viewport={"width": 1280, "height": 900})
        tab.set_default_timeout(30_000)
        expect.set_options(timeout=30_000)
        with serve(create_app(settings), port=port) as base:
            tab.goto(f"{base}/ui")
            log_in(tab)
            expect(tab.locator("#sleep")).to_have_text("awake")
        with serve(create_app(settings), port=port):  # the same daemon, restarted
            expect(tab.locator("#login")).to_be_visible()
            expect(tab.locator("#sleep")).to_be_hidden()
        browser.close()
