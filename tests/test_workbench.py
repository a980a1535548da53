"""memnest-ctl ui in a real browser: Debian's Chromium driven by Selenium against the real
workbench process, over a real daemon. Whatever the browser changes is then read back through
the real MCP shim (memory_get, memory_search) and again after the daemon restarts."""
import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import anyio
import pytest
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait
from support import ROOT, Workbench, result_json, selenium_chrome
from workbench_session import sign_in

pytestmark = pytest.mark.timeout(1800)  # the first use may install Chromium with apt-get
# MEMNEST_SCREENSHOTS=1 writes the README's pictures of the main views.
SHOTS = ROOT / "docs" / "images" if os.environ.get("MEMNEST_SCREENSHOTS") else None

SEED = [
    {"content": "We deploy with blue-green switches, never on Fridays", "category": "decision",
     "tags": ["deploy"], "importance": 4},
    {"content": "The billing service retries a failed charge three times", "tags": ["billing"]},
    {"content": "Use ruff for linting and keep lines under 100 characters",
     "category": "preference", "tags": ["style"]},
    {"content": "The staging database is rebuilt every Monday from a snapshot",
     "tags": ["staging", "database"]},
]


@pytest.fixture
def bench(fresh_daemon, workspace, chromium):
    """A daemon with SEED stored, the workbench over it, and a browser signed in."""
    fresh_daemon.start()
    client = fresh_daemon.client()
    stored = client.call_tool("memory_store", {"items": SEED}, str(workspace))
    ids = [r["id"] for r in stored["results"]]
    ui = Workbench(fresh_daemon, workspace)
    browser = selenium_chrome()
    sign_in(browser, ui)
    yield fresh_daemon, workspace, ui, browser, client, ids
    browser.quit()
    ui.stop()
    client.close()


def mcp_calls(daemon, workspace: Path, *calls: tuple[str, dict]) -> list:
    """Each (tool, arguments) through the real memnest-mcp shim; a tool error comes back as
    its text."""
    async def run():
        out = []
        async with daemon.mcp(workspace, MEMORY_WORKSPACE=str(workspace)) as session:
            for tool, arguments in calls:
                result = await session.call_tool(tool, arguments)
                out.append(result.content[0].text if result.is_error else result_json(result))
        return out
    return anyio.run(run)


def shot(browser, name: str) -> None:
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        # a picture for the README shows no path of this machine
        browser.execute_script("document.querySelectorAll('.workspace code').forEach("
                               "c => { c.textContent = '~/code/shop'; })")
        browser.save_screenshot(str(SHOTS / f"workbench-{name}.png"))


def wait_for(browser, css: str, timeout: float = 10):
    """The first element `css` selects, once there is one; else fail with the page's text."""
    try:
        # a page being replaced may answer with an error of its own: asked again
        return WebDriverWait(browser, timeout, ignored_exceptions=(WebDriverException,)).until(
            lambda b: b.find_elements(By.CSS_SELECTOR, css) or False)[0]
    except TimeoutException:
        text = browser.find_element(By.TAG_NAME, "body").text
        raise AssertionError(f"no {css} at {browser.current_url}:\n{text}") from None


def load(browser, element) -> None:
    """Click (or submit) `element` and wait until the page it was on has gone, so what is
    looked for next is on the new page, not a notice left on the old one."""
    page = browser.find_element(By.TAG_NAME, "html")
    if element.tag_name in ("input", "textarea"):
        element.submit()
    else:
        element.click()
    WebDriverWait(browser, 10).until(lambda _: _gone(page))


def _gone(element) -> bool:
    """Whether `element` has left the page. Chromium answers for an element of a page being
    replaced either "stale" or, mid-navigation, "Node ... does not belong to the document"
    (an unknown error selenium's staleness_of does not catch): both mean gone."""
    try:
        element.is_enabled()
        return False
    except WebDriverException:
        return True


def no_errors_in_console(browser, but_status: int | None = None) -> None:
    """Nothing logged as an error; `but_status`: except the browser noting a page that
    answered with that status."""
    logged = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"
              and not (but_status and e["source"] == "network"
                       and f"status of {but_status} " in e["message"])]
    assert logged == []


def test_search_filter_edit_share_and_forget_hold_through_mcp_and_a_restart(bench):
    daemon, workspace, ui, browser, client, ids = bench
    deploy, billing, style, staging = ids
    rows = browser.find_elements(By.CSS_SELECTOR, "#rows li.memory")
    assert len(rows) == 4 and "of 4" in browser.find_element(By.ID, "count").text
    shot(browser, "memories")

    # search: the same ranking as memory_search, and why each hit came back
    box = browser.find_element(By.NAME, "q")
    box.send_keys("how do we deploy")
    load(browser, box)
    first = wait_for(browser, "#rows li.memory")
    assert first.get_attribute("id") == f"m{deploy}"
    assert "matched: deploy" in first.find_element(By.CSS_SELECTOR, ".why").text
    searched = client.call_tool("memory_search", {"query": "how do we deploy"}, str(workspace))
    shown = [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR,
                                                                   "#rows li.memory")]
    assert shown == [f"m{r['id']}" for r in searched["results"]]
    shot(browser, "search")

    # filter by category, from the form; the URL carries it
    browser.get(ui.base + "/")
    Select(browser.find_element(By.NAME, "category")).select_by_visible_text("preference")
    load(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
    wait_for(browser, f"#m{style}")
    assert "category=preference" in browser.current_url
    assert [e.get_attribute("id") for e in browser.find_elements(
        By.CSS_SELECTOR, "#rows li.memory")] == [f"m{style}"]

    # edit text, tags and importance
    browser.get(f"{ui.base}/memory/{billing}")
    text = browser.find_element(By.ID, "edit-content")
    text.clear()
    text.send_keys("The billing service retries a failed charge five times, then alerts")
    tags = browser.find_element(By.ID, "edit-tags")
    tags.clear()
    tags.send_keys("billing, payments")
    Select(browser.find_element(By.ID, "edit-importance")).select_by_visible_text("5")
    load(browser, browser.find_element(By.CSS_SELECTOR, "form.edit button"))
    assert wait_for(browser, ".notice").text == "Saved."
    shot(browser, "memory")

    # share, then forget one memory with confirmation and two in bulk
    load(browser, browser.find_element(By.ID, "share"))
    assert wait_for(browser, ".notice").text == "Shared with the team."
    browser.get(f"{ui.base}/memory/{style}")
    load(browser, browser.find_element(By.ID, "forget"))
    load(browser, wait_for(browser, "#confirm-forget"))
    assert wait_for(browser, ".notice").text == "Forgotten."
    browser.get(ui.base + "/")
    for memory_id in (deploy, staging):
        browser.find_element(By.ID, f"pick{memory_id}").click()
    load(browser, browser.find_element(By.CSS_SELECTOR, "button[form=bulk]"))
    assert wait_for(browser, "h1").text == "Forget 2 memories?"
    load(browser, browser.find_element(By.ID, "confirm-forget"))
    wait_for(browser, ".notice")
    assert [e.get_attribute("id") for e in browser.find_elements(
        By.CSS_SELECTOR, "#rows li.memory")] == [f"m{billing}"]
    no_errors_in_console(browser)

    def check():
        got, search, gone = mcp_calls(
            daemon, workspace, ("memory_get", {"id": billing}),
            ("memory_search", {"query": "what happens when a charge fails"}),
            ("memory_get", {"ids": [deploy, style, staging]}))
        assert got["content"] == ("The billing service retries a failed charge five times, "
                                  "then alerts")
        assert got["tags"] == ["billing", "payments"] and got["importance"] == 5
        assert got["scope"] == "shared"
        assert "origin" not in got  # an edit keeps who wrote it (here: nobody said)
        assert search["results"][0]["id"] == billing
        assert gone["memories"] == [] and sorted(gone["missing"]) == sorted(
            [deploy, style, staging])
        assert (workspace / ".memnest" / "shared" / f"{got['global_id']}.json").exists()
    check()
    daemon.stop()
    daemon.start()
    check()


def test_what_an_agent_writes_appears_without_a_reload(bench):
    daemon, workspace, ui, browser, client, ids = bench
    browser.execute_script("window.__same_page = true")
    new = client.call_tool("memory_store", {"content": "The search cluster has three nodes in "
                                                       "two zones"}, str(workspace))["id"]
    row = wait_for(browser, f"#m{new}", timeout=15)
    assert "three nodes" in row.text
    assert browser.execute_script("return window.__same_page") is True  # no reload
    assert "of 5" in browser.find_element(By.ID, "count").text


def shown_ids(browser) -> list[str]:
    return [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR,
                                                                 "#rows li.memory")]


def test_the_state_and_day_filters_narrow_the_list_and_a_search(bench):
    daemon, workspace, ui, browser, client, ids = bench
    deploy, billing, style, staging = ids
    client.call_tool("memory_relate", {"from_id": staging, "to_id": billing,
                                     "relationship": "SUPERSEDES"}, str(workspace))
    browser.get(ui.base + "/")
    Select(browser.find_element(By.NAME, "state")).select_by_visible_text("superseded")
    load(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
    assert "state=superseded" in browser.current_url
    assert shown_ids(browser) == [f"m{billing}"]
    browser.get(ui.base + "/?state=current")
    assert sorted(shown_ids(browser)) == sorted(f"m{i}" for i in (deploy, style, staging))
    browser.get(ui.base + "/?q=billing+charge+retries&state=superseded")
    assert shown_ids(browser) == [f"m{billing}"]
    today = datetime.now(timezone.utc).date()
    browser.get(f"{ui.base}/?until={today - timedelta(days=1)}")
    assert shown_ids(browser) == []
    browser.get(f"{ui.base}/?since={today}&until={today}")
    assert len(shown_ids(browser)) == 4
    browser.get(f"{ui.base}/?since=not-a-day")  # ignored, not a traceback
    assert len(shown_ids(browser)) == 4
    no_errors_in_console(browser)


def test_personal_memories_and_other_projects_show_as_such(bench, tmp_path):
    daemon, workspace, ui, browser, client, ids = bench
    mine = client.call_tool("memory_store", {"content": "I want answers in British English "
                                             "with metric units", "category": "preference",
                                             "scope": "user"}, str(workspace))
    other = (tmp_path / "other-project").resolve()
    other.mkdir()
    theirs = client.call_tool("memory_store", {"content": "The other project deploys its "
                                               "billing workers with blue-green switches"},
                              str(other))
    browser.get(ui.base + "/?q=British+English+metric+units")
    row = wait_for(browser, f"#m{mine['id']}")
    assert "personal" in row.text
    browser.get(ui.base + "/?scope=user")
    assert shown_ids(browser) == [f"m{mine['id']}"]
    # the personal memory's own page: no team sharing offered; an edit holds
    load(browser, browser.find_element(By.CSS_SELECTOR, f"#m{mine['id']} .meta a"))
    assert "personal" in browser.find_element(By.TAG_NAME, "main").text
    assert not browser.find_elements(By.ID, "share")
    # another project only when asked, each of its hits saying where it is from
    browser.get(ui.base + "/?q=billing+workers+blue-green")
    assert f"in {other}" not in browser.find_element(By.ID, "rows").text
    browser.get(ui.base + "/")
    browser.find_element(By.NAME, "q").send_keys("billing workers blue-green")
    browser.find_element(By.NAME, "all").click()
    load(browser, browser.find_element(By.CSS_SELECTOR, "form.filters button"))
    assert "all=1" in browser.current_url
    assert f"in {other}" in browser.find_element(By.ID, "rows").text
    assert theirs["id"] in [int(a.text.lstrip("#")) for a in browser.find_elements(
        By.CSS_SELECTOR, "#rows .meta a[href*='other-project']")]
    no_errors_in_console(browser)


def test_unsharing_from_the_team_page(bench):
    daemon, workspace, ui, browser, client, ids = bench
    client.call_tool("memory_share", {"id": ids[0]}, str(workspace))
    browser.get(ui.base + "/team")
    assert "1 of 4 memories are shared" in browser.find_element(By.TAG_NAME, "main").text
    shot(browser, "team")
    load(browser, browser.find_element(By.CSS_SELECTOR,
                                       "main form button[type=submit]:not(#sync)"))
    wait_for(browser, ".notice")
    got, = mcp_calls(daemon, workspace, ("memory_get", {"id": ids[0]}))
    assert got.get("scope", "private") == "private"


def test_an_edit_of_a_memory_an_agent_changed_meanwhile_is_refused_not_lost(bench):
    daemon, workspace, ui, browser, client, ids = bench
    billing = ids[1]
    browser.get(f"{ui.base}/memory/{billing}")
    agents = "The billing service retries a failed charge four times"
    mcp_calls(daemon, workspace, ("memory_update", {"id": billing, "content": agents}))
    text = browser.find_element(By.ID, "edit-content")
    text.clear()
    text.send_keys("The billing service never retries")
    load(browser, browser.find_element(By.CSS_SELECTOR, "form.edit button"))
    assert "nothing was saved" in wait_for(browser, "#conflict").text
    assert agents in browser.find_element(By.TAG_NAME, "main").text  # the version now
    assert browser.find_element(By.ID, "edit-content").get_attribute("value") == \
        "The billing service never retries"  # the draft, to save again on purpose
    # forgetting it from a page loaded before the change is refused too
    browser.get(f"{ui.base}/forget?id={billing}")
    mcp_calls(daemon, workspace, ("memory_update", {"id": billing, "importance": 5}))
    load(browser, browser.find_element(By.ID, "confirm-forget"))
    assert "nothing was saved" in wait_for(browser, "#conflict").text
    no_errors_in_console(browser, but_status=409)
    daemon.stop()
    daemon.start()
    got, = mcp_calls(daemon, workspace, ("memory_get", {"id": billing}))
    assert got["content"] == agents and got["importance"] == 5


def test_the_team_page_shows_the_last_sync_and_files_that_could_not_come_in(bench):
    daemon, workspace, ui, browser, client, ids = bench
    broken = workspace / ".memnest" / "shared" / f"{'ab' * 16}.json"
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text('<<<<<<< HEAD\n{"content": "ours"}\n=======\n{"content": "theirs"}\n'
                      '>>>>>>> main\n')
    browser.get(ui.base + "/team")
    load(browser, browser.find_element(By.ID, "sync"))
    assert "last brought in at" in browser.find_element(By.ID, "last-sync").text
    problems = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "ul.problems li")]
    assert len(problems) == 1 and broken.name in problems[0] and "conflict" in problems[0]
    browser.get(ui.base + "/team")  # the problem stays in view, not only after a sync
    assert len(browser.find_elements(By.CSS_SELECTOR, "ul.problems li")) == 1
    assert "<<<<<<<" in broken.read_text()  # never written over


def test_dream_proposes_a_merge_from_the_review_page_and_the_person_makes_it(bench):
    daemon, workspace, ui, browser, client, ids = bench
    stored = client.call_tool("memory_store", {"items": [
        {"content": "The integration tests need Docker running locally", "tags": ["tests"]},
        {"content": "The integration tests need Docker running locally!", "tags": ["docker"]},
    ]}, str(workspace))["results"]
    a, b = (r["id"] for r in stored)
    assert a != b
    browser.get(ui.base + "/review")
    load(browser, browser.find_element(By.ID, "ask-dream"))
    proposal = wait_for(browser, ".proposal")
    survivor, absorbed = map(int, proposal.get_attribute("id")[len("merge"):].split("-"))
    assert {survivor, absorbed} == {a, b}
    assert "Docker running locally" in proposal.text
    # a dry run changed nothing
    assert len(mcp_calls(daemon, workspace, ("memory_get", {"ids": [a, b]}))[0]["memories"]) == 2
    load(browser, proposal.find_element(By.XPATH, f".//button[text()='Merge into #{survivor}']"))
    assert wait_for(browser, ".notice").text == "Merged."
    no_errors_in_console(browser)

    def check():
        kept, gone = mcp_calls(daemon, workspace, ("memory_get", {"id": survivor}),
                               ("memory_get", {"id": absorbed}))
        assert sorted(kept["tags"]) == ["docker", "tests"] and "no memory with id" in gone
    check()
    browser.get(ui.base + "/dream")
    assert "No dream has run" in browser.find_element(By.ID, "last-dream").text
    load(browser, browser.find_element(By.ID, "run-dream"))
    assert "The last dream ran at" in wait_for(browser, "#last-dream").text
    daemon.stop()
    daemon.start()
    check()
    browser.get(ui.base + "/dream")  # what the last dream did is kept in the database
    assert "The last dream ran at" in browser.find_element(By.ID, "last-dream").text


def test_an_unknown_memory_or_workspace_is_a_page_not_a_traceback(bench):
    daemon, workspace, ui, browser, client, ids = bench
    browser.get(ui.base + "/memory/999999")
    assert "no memory with id 999999" in browser.find_element(By.CSS_SELECTOR, ".error").text
    elsewhere = workspace.parent / "elsewhere"
    elsewhere.mkdir()
    browser.get(f"{ui.base}/?ws={elsewhere}")
    assert "Not a workspace the daemon has open" in browser.find_element(By.TAG_NAME, "h1").text
    assert not (elsewhere / ".memnest").exists()


AXE = ROOT / ".tools" / "axe" / "node_modules" / "axe-core" / "axe.min.js"


def serious_violations(browser) -> list[str]:
    """What axe-core finds of impact serious or critical on the page shown."""
    browser.execute_script(AXE.read_text())
    found = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document).then(r => done(r.violations.map(v => ({id: v.id, impact: v.impact,"
        " nodes: v.nodes.map(n => n.target.join(' '))}))));")
    return [f"{v['id']} ({v['impact']}): {v['nodes'][:3]}" for v in found
            if v["impact"] in ("serious", "critical")]


def test_main_views_have_no_serious_accessibility_violations(bench):
    assert AXE.exists(), "axe-core is missing: `make axe` installs it (make test does)"
    daemon, workspace, ui, browser, client, ids = bench
    client.call_tool("memory_store", {"content": "The rate limit is 100 requests a minute",
                                      "tags": ["api"]}, str(workspace))
    client.call_tool("memory_store", {"content": "The rate limit is 500 requests a minute",
                                      "tags": ["api"]}, str(workspace))
    found = {}
    for path in ("/", "/?q=rate+limit", f"/memory/{ids[0]}", f"/forget?id={ids[0]}",
                 "/workspaces", "/dream", "/review", "/team"):
        browser.get(ui.base + path)
        found[path] = serious_violations(browser)
    browser.get(ui.base + "/review")
    load(browser, browser.find_element(By.ID, "ask-dream"))  # a dry run's proposals
    found["/dream (a dry run)"] = serious_violations(browser)
    assert found == {path: [] for path in found}


def test_workspaces_lists_the_open_ones_with_counts_and_health(bench):
    daemon, workspace, ui, browser, client, ids = bench
    browser.get(ui.base + "/workspaces")
    row = next(r for r in browser.find_elements(By.CSS_SELECTOR, "tbody tr")
               if str(workspace) in r.text)
    cells = [c.text for c in row.find_elements(By.TAG_NAME, "td")]
    assert cells[1] == "4" and cells[2] == "healthy"
    load(browser, row.find_element(By.TAG_NAME, "a"))
    assert len(wait_for(browser, "#rows").find_elements(By.CSS_SELECTOR, "li.memory")) == 4


HOOK = {"via": "hook", "client": "claude-code", "session": "s-42"}


def test_review_keeps_and_discards_what_hooks_captured(bench):
    daemon, workspace, ui, browser, client, ids = bench
    captured = [client.call_tool("memory_store", {"content": text, "keep_as_is": True},
                                 str(workspace), origin=HOOK)["id"] for text in (
        "The payments team owns the ledger service and its on-call rota",
        "Local development uses docker compose with the dev profile",
        "The API rate limit is 100 requests per minute",
        "The API rate limit is 500 requests per minute")]
    browser.get(ui.base + "/review")
    waiting = [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR,
                                                                     "#added-h ~ ol li")]
    assert waiting == [f"r{i}" for i in reversed(captured)]  # the seeded ones were asked for
    pair = browser.find_element(By.CSS_SELECTOR, ".pair").text
    assert "100 requests" in pair and "500 requests" in pair
    shot(browser, "review")
    load(browser, browser.find_element(By.ID, f"keep{captured[0]}"))
    assert wait_for(browser, ".notice").text == "Marked as reviewed."
    load(browser, browser.find_element(By.ID, f"discard{captured[1]}"))
    assert wait_for(browser, ".notice").text == "Forgotten."
    assert "/review" in browser.current_url
    left = [e.get_attribute("id") for e in browser.find_elements(By.CSS_SELECTOR,
                                                                  "#added-h ~ ol li")]
    assert left == [f"r{captured[3]}", f"r{captured[2]}"]
    # settle the disagreement: the newer one replaces the older
    load(browser, browser.find_element(By.XPATH, f"//button[text()='#{captured[3]} replaces "
                                                 f"#{captured[2]}']"))
    wait_for(browser, ".notice")
    assert browser.find_elements(By.CSS_SELECTOR, ".pair") == []
    no_errors_in_console(browser)

    def check():
        queue, kept, gone, newer = mcp_calls(
            daemon, workspace, ("memory_review", {}), ("memory_get", {"id": captured[0]}),
            ("memory_get", {"id": captured[1]}), ("memory_get", {"id": captured[2]}))
        assert [m["id"] for m in queue["added"]] == [captured[3], captured[2]]
        assert queue["disagreements"] == []
        assert kept["origin"]["via"] == "hook" and "no memory with id" in gone
        assert newer["superseded_by"] == [captured[3]]
    check()
    daemon.stop()
    daemon.start()
    check()
    browser.get(ui.base + "/review")
    load(browser, browser.find_element(By.ID, "keep-all"))
    assert wait_for(browser, ".notice").text == "Marked as reviewed."
    assert "Nothing waits for review." in browser.find_element(By.TAG_NAME, "main").text
