"""memory_graph_html: the page is drawn by real headless Chromium (Debian package `chromium`,
installed here when missing and running as root), user text stays text, nothing is fetched
from the network, and the node limit holds."""
import base64
import fcntl
import json
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

import anyio
import pytest

from support import error_text, result_json
from memnest_shims.client import ToolFailure

# No network at all: the page is a file:// URL, every background service is off, names do
# not resolve and any HTTP request would go to a dead proxy.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--no-default-browser-check",
         "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9",
         "--window-size=1200,800", "--hide-scrollbars"]

MARKER_SCRIPT = "<script>window.__pwned = 'script'</script>"
MARKER_IMG = "</script><img src=x onerror=\"window.__pwned='img'\">"
MARKER_COMMENT = "<!--<script>window.__pwned='comment'</script>-->"
HOSTILE = [
    ("Rollback plan: " + MARKER_SCRIPT, ["<b>ops</b>", "deploy"]),
    ("Broken tag " + MARKER_IMG + " and more", ["deploy"]),
    ("Odd text " + MARKER_COMMENT + " \u2028 line \u2029 para & ampersand", ["ops"]),
]


class DevTools:
    """Chromium driven over --remote-debugging-pipe (fd 3 in, fd 4 out, NUL-framed JSON),
    with nothing but the standard library."""

    def __init__(self, binary: str, profile: Path):
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # Out of the way of fds 3 and 4, which the child gets.
        self._keep = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
                      for fd in (to_chrome_r, from_chrome_w)]
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)
        child_in, child_out = self._keep

        def wire():
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            pass_fds=(3, 4), preexec_fn=wire)
        for fd in self._keep:
            os.close(fd)
        self._out = to_chrome_w
        self._in = from_chrome_r
        self._next = 0
        self._replies: dict[int, dict] = {}
        self.events: "queue.Queue[dict]" = queue.Queue()
        self._cond = threading.Condition()
        self.stderr: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def _read(self):
        buffer = b""
        while True:
            chunk = os.read(self._in, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    with self._cond:
                        self._replies[message["id"]] = message
                        self._cond.notify_all()
                else:
                    self.events.put(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = 30) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._next not in self._replies:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"{method}: no reply from Chromium; stderr: "
                                       f"{''.join(self.stderr)[-1500:]}")
                self._cond.wait(min(left, 0.5))
            reply = self._replies.pop(self._next)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def wait_for(self, method: str, seen: list, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                event = self.events.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(event)
            if event.get("method") == method:
                return event
        raise TimeoutError(f"no {method} within {timeout}s")

    def drain(self, seen: list, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                seen.append(self.events.get(timeout=0.1))
            except queue.Empty:
                pass

    def close(self):
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        for fd in (self._out, self._in):
            try:
                os.close(fd)
            except OSError:
                pass


def _problems(events: list) -> list[str]:
    """Console errors, uncaught exceptions and log errors (CSP violations land here too)."""
    found = []
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            found.append(json.dumps(params["exceptionDetails"])[:500])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(json.dumps(params.get("args"))[:500])
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            found.append(params["entry"].get("text", "")[:500])
    return found


def _requests(events: list) -> list[str]:
    return [e["params"]["request"]["url"] for e in events
            if e.get("method") == "Network.requestWillBeSent"]


@pytest.fixture
def hostile_graph(call):
    stored = call("memory_store", items=[
        {"content": c, "tags": t, "importance": 3} for c, t in HOSTILE] + [
        {"content": "Deploys go out on Tuesdays after the standup", "tags": ["deploy"],
         "category": "decision"},
        {"content": "Deploys used to go out on Fridays", "tags": ["deploy"],
         "category": "decision"},
        {"content": "The on-call engineer owns the rollback", "tags": ["ops"],
         "category": "pattern"},
    ])
    ids = [r["id"] for r in stored["results"]]
    assert stored["stored"] == len(ids)
    call("memory_relate", relations=[
        {"from_id": ids[3], "to_id": ids[4], "relationship": "SUPERSEDES"},
        {"from_id": ids[5], "to_id": ids[0], "relationship": "EXPLAINS"},
        {"from_id": ids[1], "to_id": ids[2]}])
    call("memory_keep_separate", pairs=[[ids[0], ids[1]]])
    return ids


@pytest.mark.timeout(1800)  # the first use may install Chromium with apt-get
def test_page_draws_in_chromium_escapes_user_text_and_stays_offline(
        chromium, call, hostile_graph, workspace, tmp_path):
    made = call("memory_graph_html")
    page = Path(made["path"])
    assert page == workspace / ".memnest" / "graph.html"
    assert made["memories"] == 6 and made["topics"] == 3 and made["nodes"] == 9
    assert made["edges"] == 3 and made["keep_separate"] == 1
    assert (page.stat().st_mode & 0o777) == 0o600

    browser = DevTools(chromium, tmp_path / "profile")
    events: list = []
    try:
        target = next(t for t in browser.send("Target.getTargets")["targetInfos"]
                      if t["type"] == "page")
        session = browser.send("Target.attachToTarget", {"targetId": target["targetId"],
                                                         "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            browser.send(f"{domain}.enable", session=session)
        browser.send("Emulation.setDeviceMetricsOverride", {
            "width": 1200, "height": 800, "deviceScaleFactor": 1, "mobile": False},
            session=session)
        browser.send("Page.navigate", {"url": page.as_uri()}, session=session)
        browser.wait_for("Page.loadEventFired", events)
        browser.drain(events, 1.0)  # let the layout run and anything scheduled fire

        def js(expression: str):
            reply = browser.send("Runtime.evaluate", {"expression": expression,
                                                      "returnByValue": True},
                                 session=session)
            assert "exceptionDetails" not in reply, reply
            return reply["result"].get("value")

        assert js("window.__pwned === undefined") is True
        assert js("document.querySelectorAll('img').length") == 0
        assert js("document.scripts.length") == 2  # the data block and the page's code
        assert js("document.getElementById('counts').dataset.nodes") == "9"
        counts = js("document.getElementById('counts').textContent")
        assert counts.startswith("9 nodes: 6 memories, 3 topics"), counts
        assert js("document.body.innerText").count("9 nodes") == 1

        # Click the memory carrying a script: the panel shows its text as text.
        js("window.memnestGraph.settle()")
        where = js(f"window.memnestGraph.position('m{hostile_graph[0]}')")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            browser.send("Input.dispatchMouseEvent",
                         {"type": kind, "x": where["x"], "y": where["y"], "button": "left",
                          "buttons": 1 if kind == "mousePressed" else 0, "clickCount": 1},
                         session=session)
        browser.drain(events, 0.3)
        shown = js("document.getElementById('detail-content').textContent")
        assert shown == HOSTILE[0][0]
        assert js("document.getElementById('panel').querySelectorAll('script, img').length") \
            == 0
        for n, (content, _) in enumerate(HOSTILE):
            js(f"window.memnestGraph.select('m{hostile_graph[n]}')")
            assert js("document.getElementById('detail-content').textContent") == content
        js("window.memnestGraph.select('t<b>ops</b>')")
        assert js("document.querySelector('#panel h2').textContent") == "Topic #<b>ops</b>"
        assert js("document.querySelectorAll('b').length") == 0
        assert js("window.__pwned === undefined") is True

        js(f"window.memnestGraph.select('m{hostile_graph[0]}')")
        painted = js("""(() => { const c = document.getElementById('graph');
            const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })()""")
        assert painted > 2000, f"only {painted} pixels drawn"
        shot = base64.b64decode(browser.send("Page.captureScreenshot", {"format": "png"},
                                             session=session)["data"])
        browser.drain(events, 0.2)
    finally:
        browser.close()
    screenshot = tmp_path / "graph.png"
    if os.environ.get("MEMNEST_KEEP_SCREENSHOT"):
        Path(os.environ["MEMNEST_KEEP_SCREENSHOT"]).write_bytes(shot)
    screenshot.write_bytes(shot)
    assert screenshot.stat().st_size > 10_000
    assert shot[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(shot[16:20], "big"), int.from_bytes(shot[20:24], "big")
    assert (width, height) == (1200, 800)

    assert _problems(events) == []
    offline = [u for u in _requests(events) if not u.startswith(("file:", "data:"))]
    assert offline == [], offline


def test_user_text_is_escaped_in_the_file_itself(call, hostile_graph, workspace):
    page = Path(call("memory_graph_html", path=".memnest/view/graph.html")["path"])
    assert page == workspace / ".memnest" / "view" / "graph.html"
    html = page.read_text(encoding="utf-8")
    assert html.count("<script") == 2 and html.count("</script") == 2
    assert "<img" not in html and "<b>" not in html and "<!--<" not in html
    assert "\u2028" not in html and "\u2029" not in html
    block = re.search(r'<script type="application/json" id="memnest-data">(.*?)</script>',
                      html, re.S)
    data = json.loads(block.group(1))
    # Outside the data, nothing in the page points anywhere: no URL, no src or href.
    code = html[:block.start(1)] + html[block.end(1):]
    assert not re.search(r"https?:|//cdn|\bsrc\s*=|\bhref\s*=|@import|url\(|fetch\(|"
                         r"XMLHttpRequest|WebSocket", code)
    assert {m["content"] for m in data["memories"]} >= {c for c, _ in HOSTILE}
    assert str(workspace) not in html
    # The same call again replaces its own page; an unrelated file is never overwritten.
    call("memory_graph_html", path=".memnest/view/graph.html")
    (workspace / ".memnest" / "index.html").write_text("<p>mine</p>")
    with pytest.raises(ToolFailure) as clobber:
        call("memory_graph_html", path=".memnest/index.html")
    assert "not a graph page" in clobber.value.message
    assert (workspace / ".memnest" / "index.html").read_text() == "<p>mine</p>"
    with pytest.raises(ToolFailure) as up:
        call("memory_graph_html", path="../graph.html")
    assert ".." in up.value.message


def test_pages_are_written_only_under_the_workspaces_own_folder(call, hostile_graph,
                                                                 workspace, tmp_path):
    """A call once created /etc/passwd.html: a page goes under .memnest/ and nowhere else."""
    for path in ("/etc/passwd.html", str(tmp_path / "page.html"), "index.html",
                 str(workspace / "docs" / "graph.html")):
        with pytest.raises(ToolFailure) as refused:
            call("memory_graph_html", path=path)
        assert refused.value.code == "permission_denied" and ".memnest" in refused.value.message
    assert not os.path.exists("/etc/passwd.html") and not (tmp_path / "page.html").exists()
    assert not (workspace / "index.html").exists()


def test_empty_workspace_and_node_limits(call, hostile_graph):
    with pytest.raises(ToolFailure) as small:
        call("memory_graph_html", max_nodes=8)
    assert small.value.code == "invalid_argument"
    assert "9 nodes" in small.value.message and "include_topics" in small.value.message
    without_topics = call("memory_graph_html", max_nodes=8, include_topics=False)
    assert without_topics["nodes"] == 6 and without_topics["topics"] == 0
    with pytest.raises(ToolFailure) as over:
        call("memory_graph_html", max_nodes=10**6)
    assert "MEMORY_GRAPH_MAX_NODES" in over.value.message


def test_empty_workspace_gives_an_empty_page(call, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    made = call("memory_graph_html", empty)
    assert made["nodes"] == 0 and Path(made["path"]).exists()


def test_setting_caps_the_graph_and_the_tool_works_through_the_shim(fresh_daemon, workspace):
    fresh_daemon.env["MEMORY_GRAPH_MAX_NODES"] = "3"
    fresh_daemon.start()
    client = fresh_daemon.client()
    try:
        client.call_tool("memory_store", {"items": [{"content": f"Fact number {n} is {n * 7}"}
                                                    for n in range(3)]}, str(workspace))
        made = client.call_tool("memory_graph_html", {}, str(workspace))
        assert made["nodes"] == 3
        client.call_tool("memory_store", {"content": "A fourth fact about caching"},
                         str(workspace))
        with pytest.raises(ToolFailure) as refused:
            client.call_tool("memory_graph_html", {}, str(workspace))
        assert "4 nodes" in refused.value.message and "MEMORY_GRAPH_MAX_NODES" in \
            refused.value.message
    finally:
        client.close()

    async def through_shim():
        async with fresh_daemon.mcp(workspace) as session:
            tools = {t.name for t in (await session.list_tools()).tools}
            assert {"memory_graph_html", "memory_export", "memory_import"} <= tools
            exported = result_json(await session.call_tool("memory_export",
                                                           {"path": ".memnest/shim.json"}))
            assert exported["memories"] == 4
            refused = await session.call_tool("memory_graph_html", {})
            assert "MEMORY_GRAPH_MAX_NODES" in error_text(refused)
    anyio.run(through_shim)
