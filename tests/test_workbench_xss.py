"""Memory text that tries to become markup, shown by the workbench in a real browser: on every
view that shows it, nothing runs (no dialog, no marker set, no error in the console, which is
where a script the policy blocked would show up), no element gains a handler or a javascript:
link, and the text on the page is exactly the text stored."""
from urllib.parse import urlsplit

import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By

from support import Workbench, selenium_chrome
from workbench_session import sign_in

pytestmark = pytest.mark.timeout(1800)  # the first use may install Chromium with apt-get

RUN = "window.__pwned=1;alert(1)"
CORPUS = [
    f"<script>{RUN}</script>",
    f"<img src=x onerror=\"{RUN}\">",
    f"\"><svg onload=\"{RUN}\">",
    f"<svg><script>{RUN}</script></svg>",
    f"</textarea><script>{RUN}</script>",
    f"</title><script>{RUN}</script>",
    f"<iframe srcdoc=\"<script>parent.{RUN}</script>\"></iframe>",
    f"'><body onload=\"{RUN}\">",
    f"<a href=\"javascript:{RUN}\">click me</a>",
    f"[click me](javascript:{RUN})",
    f"![x](x\" onerror=\"{RUN})",
    f"<details open ontoggle=\"{RUN}\">",
    f"<math><mtext><table><mglyph><style><img src=x onerror=\"{RUN}\">",
    f"<meta http-equiv=\"refresh\" content=\"0;url=javascript:{RUN}\">",
    "<base href=\"//evil.example/\"><link rel=stylesheet href=//evil.example/x.css>",
    "<style>body{display:none}</style>",
    f"<object data=\"javascript:{RUN}\"></object>",
    "{{ 7*7 }} {% for x in range(3) %}loop{% endfor %} ${7*7} #{7*7}",
    f"line\u2028separator\u2029<script>{RUN}</script>",
    f"<scr<script>ipt>{RUN}</scr</script>ipt>",
    f"&lt;script&gt;{RUN}&lt;/script&gt; &amp; &#x3C;",
]
TAGS = ["<b>bold</b>", "\"onmouseover=\"x", "javascript:x"]


@pytest.fixture(scope="module")
def hostile(daemon, chromium, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("hostile").resolve()
    client = daemon.client()
    items = [{"content": f"Note {n}: {text}", "tags": TAGS, "keep_as_is": True}
             for n, text in enumerate(CORPUS)]
    hook = {"via": "hook", "client": "claude-code", "session": "s-xss"}  # for /review
    stored = [*client.call_tool("memory_store", {"items": items[:12]}, str(workspace))["results"],
              *client.call_tool("memory_store", {"items": items[12:]}, str(workspace),
                                origin=hook)["results"]]
    ids = [r["id"] for r in stored if r.get("id")]
    assert len(ids) == len(CORPUS), stored
    got = client.call_tool("memory_get", {"ids": ids, "include_edges": False},
                           str(workspace))["memories"]
    texts = {m["id"]: m["content"] for m in got}
    tags = {m["id"]: m["tags"] for m in got}
    assert all(tags.values())
    client.call_tool("memory_share", {"ids": ids[:5]}, str(workspace))
    ui = Workbench(daemon, workspace)
    browser = selenium_chrome()
    sign_in(browser, ui)
    yield ui, browser, texts, tags
    browser.quit()
    ui.stop()
    client.close()


def nothing_ran(browser, where: str) -> None:
    try:
        alert = browser.switch_to.alert
        text = alert.text
        alert.dismiss()
        raise AssertionError(f"{where}: a dialog opened ({text!r})")
    except NoAlertPresentException:
        pass
    assert browser.execute_script("return window.__pwned") is None, where
    errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == [], where
    scripts = browser.execute_script(
        "return Array.from(document.scripts, s => s.getAttribute('src'))")
    root = "/" + urlsplit(browser.current_url).path.split("/")[1]  # the launch's root
    assert scripts == [f"{root}/static/workbench.js"], where
    handlers = browser.execute_script("""
        return Array.from(document.querySelectorAll('*')).flatMap(e =>
          Array.from(e.attributes).filter(a => a.name.startsWith('on') ||
            /^\\s*javascript:/i.test(a.value)).map(a => e.tagName + ' ' + a.name));""")
    assert handlers == [], where
    assert browser.execute_script("return document.querySelectorAll("
                                  "'iframe,object,embed,base,meta[http-equiv],svg,math,"
                                  "details,style').length") == 0, where


def test_hostile_text_is_shown_as_text_on_every_view(hostile):
    ui, browser, texts, tags = hostile
    for path in ("/", "/?q=note+script+click", "/?order=importance", "/team", "/review",
                 "/?state=current&since=2020-01-01",
                 "/forget?" + "&".join(f"id={i}" for i in texts), "/?tag=%3Cb%3Ebold%3C%2Fb%3E"):
        browser.get(ui.base + path)
        nothing_ran(browser, path)
    browser.get(ui.base + "/")
    shown = {int(e.get_attribute("id")[1:]): e.find_element(By.CSS_SELECTOR, ".content")
             .get_attribute("textContent") for e in browser.find_elements(
                 By.CSS_SELECTOR, "#rows li.memory")}
    assert shown == texts
    for memory_id, text in texts.items():
        browser.get(f"{ui.base}/memory/{memory_id}")
        nothing_ran(browser, f"memory {memory_id}")
        assert browser.find_element(By.ID, "content").get_attribute("textContent") == text
        assert browser.find_element(By.ID, "edit-content").get_attribute("value") == text
        shown_tags = [e.get_attribute("textContent") for e in browser.find_elements(
            By.CSS_SELECTOR, "main section .meta .tag")]
        assert shown_tags == tags[memory_id]


def test_the_live_graph_draws_hostile_text_as_text_in_a_sandbox(hostile):
    ui, browser, texts, tags = hostile
    browser.get(ui.base + "/graph")
    assert browser.execute_script("return window.__pwned") is None
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []
    counts = browser.find_element(By.ID, "counts").get_attribute("textContent")
    assert counts.startswith(f"{len(texts) + len(set(t for ts in tags.values() for t in ts))} "
                             f"nodes: {len(texts)} memories"), counts
    for memory_id, text in texts.items():
        browser.execute_script(f"window.memnestGraph.select('m{memory_id}')")
        assert browser.find_element(By.ID, "detail-content").get_attribute(
            "textContent") == text
    # sandboxed: the page has no origin of its own, so it cannot reach the workbench
    assert browser.execute_script("return window.origin") == "null"
