"""Shared pieces of the dashboard's browser tests: Debian's chromium through Playwright (never a
downloaded browser), a logged-in page that records console errors and refuses requests to other
origins, and axe-core (the copy shipped in the axe-playwright-python wheel) run on a page."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


@contextmanager
def chromium() -> Iterator[Any]:
    """One headless chromium. Playwright's sync API runs an event loop in this thread, which makes
    Django refuse ORM calls as "async"; they are plain synchronous calls here. The live server serves
    /static/ through the finders, so no collectstatic manifest may be named."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (never download a browser)")
    from django.test import override_settings
    from playwright.sync_api import sync_playwright

    no_manifest = override_settings(STATIC_ROOT=tempfile.mkdtemp(prefix="netaware-no-static-"))
    no_manifest.enable()
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()
    finally:
        playwright.stop()
        no_manifest.disable()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def make_user(role: str, name: str | None = None):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    account = get_user_model().objects.create_user(name or f"{role}-1", password=f"{role}-password")
    account.groups.add(Group.objects.get(name=role))
    return account


def logged_in_page(browser, base_url: str, role: str, *, viewport: dict[str, int] | None = None):
    """A new context logged in as a fresh user of ``role``; ``page.problems`` collects console
    errors, page errors and any request to another origin."""
    make_user(role)
    context = browser.new_context(viewport=viewport or DESKTOP)
    page = context.new_page()
    page.set_default_timeout(20000)
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("console", lambda msg: problems.append(f"console {msg.type}: {msg.text}")
            if msg.type == "error" and "status of 403" not in msg.text and "status of 400" not in msg.text else None)
    page.on("response", lambda r: problems.append(f"HTTP {r.status} {r.url}") if r.status == 404 else None)
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(base_url)
               else (problems.append(f"external request: {route.request.url}"), route.abort()))
    page.problems = problems
    page.base = base_url
    page.goto(base_url + "/login/")
    page.fill("input[name=username]", f"{role}-1")
    page.fill("input[name=password]", f"{role}-password")
    page.click("#login-form button[type=submit]")
    page.wait_for_selector("#current-user")
    return page


def axe_serious(page) -> list[str]:
    """axe-core's serious and critical violations on the page as it is now, one line each."""
    import axe_playwright_python

    source = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text()
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=source)
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:4]}"
            for v in result["violations"] if v.get("impact") in ("serious", "critical")]


def sideways_scroll(page) -> int:
    """How far the page itself scrolls sideways (px); scrolling inside a container does not count."""
    return page.evaluate("() => document.scrollingElement.scrollWidth - window.innerWidth")


def overflowing(page) -> list[str]:
    """Elements reaching past the window's right edge that are not inside a scrolling container:
    what to fix when ``sideways_scroll`` is positive."""
    return page.evaluate("""() => {
      // Clipped by a scrolling ancestor that is also its containing block's ancestor (an absolute
      // element escapes an unpositioned scroller: it is not clipped by it).
      const scrolls = el => {
        let absolute = getComputedStyle(el).position === 'absolute' || getComputedStyle(el).position === 'fixed';
        for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
          const style = getComputedStyle(p);
          if (absolute && style.position === 'static') continue;
          absolute = style.position === 'absolute' || style.position === 'fixed';
          if (['auto', 'scroll', 'hidden'].includes(style.overflowX)) return true;
        }
        return false;
      };
      return [...document.querySelectorAll('body *')].filter(el => el.getBoundingClientRect().right > window.innerWidth + 1 && !scrolls(el))
        .slice(0, 12).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ').join('.') : '') + ' ' + Math.round(el.getBoundingClientRect().right));
    }""")


def shot(page, name: str) -> None:
    """A full-page screenshot into $NETAWARE_SHOTS (default /tmp/netaware-shots), for a person to look at."""
    folder = Path(os.environ.get("NETAWARE_SHOTS", "/tmp/netaware-shots"))
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
