"""Signing in to a `memnest-ctl ui` the tests started (support.Workbench): the launch key buys
a session cookie scoped to the launch's secret root, and every page lives under that root
(shims/workbench/guard.py). Both helpers hand back what asks under the root."""
import re

import httpx
from selenium.webdriver.support.ui import WebDriverWait

# The page the key is exchanged on moves on to the root by itself (a meta refresh).
_ROOT = re.compile(r'content="0;url=(/[A-Za-z0-9_-]{40,})/')


def http_signed_in(ui, **options) -> httpx.Client:
    """An HTTP client holding the session cookie whose base_url is the launch's root."""
    http = httpx.Client(base_url=ui.base, follow_redirects=False, **options)
    answer = http.get(f"/?key={ui.key}")
    assert answer.status_code == 200, answer.text
    found = _ROOT.search(answer.text)
    assert found is not None, answer.text
    http.base_url = httpx.URL(ui.base + found.group(1))
    return http


def sign_in(browser, ui) -> str:
    """Open the printed address in `browser` and wait until it is on the workbench's first
    page; `ui.base` then names the root, so `ui.base + "/review"` is a page. The root's URL."""
    browser.get(ui.url)
    WebDriverWait(browser, 30).until(
        lambda b: b.current_url.startswith(ui.base + "/") and "key=" not in b.current_url
        and b.current_url.split("?")[0].rstrip("/") != ui.base)
    ui.base = browser.current_url.split("?")[0].rstrip("/")
    return ui.base
