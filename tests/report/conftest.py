"""Reports are opened in headless Chromium (Debian's ``chromium``) through Playwright; the browser
tests skip cleanly where either is missing."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

import pytest

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)


@dataclass
class Opened:
    """A report as the browser shows it, with what it asked for and complained about."""

    page: object
    requests: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)


@pytest.fixture(scope="session")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def open_report(browser, tmp_path):
    """``open_report(path, width=..., dark=...)`` → :class:`Opened`; a screenshot lands in
    tmp_path."""
    contexts = []

    def open_(path, *, width: int = 1100, height: int = 800, dark: bool = False) -> Opened:
        ctx = browser.new_context(
            viewport={"width": width, "height": height}, color_scheme="dark" if dark else "light"
        )
        contexts.append(ctx)
        page = ctx.new_page()
        opened = Opened(page)
        page.on("request", lambda r: opened.requests.append(r.url))
        page.on(
            "console", lambda m: opened.console_errors.append(m.text) if m.type == "error" else None
        )
        page.on("pageerror", lambda e: opened.console_errors.append(str(e)))
        page.goto(path.resolve().as_uri())
        page.wait_for_load_state("load")
        page.screenshot(
            path=str(tmp_path / f"{path.stem}-{width}{'-dark' if dark else ''}.png"), full_page=True
        )
        opened.requests = [u for u in opened.requests if u != path.resolve().as_uri()]
        return opened

    yield open_
    for ctx in contexts:
        ctx.close()
