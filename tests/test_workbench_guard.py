"""The workbench as a hostile neighbour sees it: a real `memnest-ctl ui` process, asked over
HTTP without its key, from another Host or Origin, without the CSRF token, with a body too
large or a redirect elsewhere. Each is refused, and the memory it aimed at is unchanged."""
import http.server
import re
import threading

import httpx
import psutil
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from support import Workbench, selenium_chrome
from workbench_session import http_signed_in


@pytest.fixture(scope="module")
def served(daemon, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("guarded").resolve()
    client = daemon.client()
    memory_id = client.call_tool("memory_store", {"content": "The release train leaves on "
                                                             "Tuesdays"}, str(workspace))["id"]
    ui = Workbench(daemon, workspace)
    yield ui, client, workspace, memory_id
    ui.stop()
    client.close()


def signed_in(ui) -> tuple[httpx.Client, str]:
    """A client holding the session cookie, asking under the launch's root (its base_url),
    and the CSRF token of the page it was given."""
    http = http_signed_in(ui)
    exchanged = httpx.get(f"{ui.base}/?key={ui.key}")
    cookie = exchanged.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert f"Path={http.base_url.path.rstrip('/')}" in cookie and ui.key not in exchanged.text
    page = http.get("/")
    assert page.status_code == 200
    return http, re.search(r'data-csrf="([^"]+)"', page.text).group(1)


def content(client, workspace, memory_id) -> str:
    return client.call_tool("memory_get", {"id": memory_id}, str(workspace))["content"]


def edit(http, memory_id, token=None, **headers):
    form = {"content": "The release train leaves on Fridays", "tags": "", "importance": "3"}
    if token is not None:
        form["csrf"] = token
    return http.post(f"/memory/{memory_id}/edit", data=form, headers=headers)


def test_only_loopback_is_listened_on(served):
    ui = served[0]
    listening = [c.laddr for c in psutil.Process(ui.proc.pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert [a.ip for a in listening] == ["127.0.0.1"] and listening[0].port == ui.port


def test_without_the_key_nothing_is_shown(served):
    ui, client, workspace, memory_id = served
    http = httpx.Client(base_url=ui.base)
    for path in ("/", f"/memory/{memory_id}", "/review", "/changes", "/static/workbench.js",
                 f"/?key={'x' * 43}", "/?key="):
        answer = http.get(path)
        assert answer.status_code == 401, path
        assert "release train" not in answer.text
    forged = httpx.Client(base_url=ui.base, cookies={f"memnest_workbench_{ui.port}": "guess"})
    assert forged.get("/").status_code == 401


def test_a_foreign_host_is_refused_even_with_the_cookie(served):
    ui, client, workspace, memory_id = served
    http, token = signed_in(ui)
    for host in ("evil.example", f"evil.example:{ui.port}", "127.0.0.1", f"127.0.0.2:{ui.port}"):
        answer = http.get("/", headers={"Host": host})
        assert answer.status_code == 403 and "release train" not in answer.text, host
        assert edit(http, memory_id, token, Host=host, Origin=f"http://{host}").status_code == 403
    assert http.get(f"/?key={ui.key}", headers={"Host": "evil.example"}).status_code == 403
    assert content(client, workspace, memory_id) == "The release train leaves on Tuesdays"


def test_a_change_needs_this_origin_and_the_csrf_token(served):
    ui, client, workspace, memory_id = served
    http, token = signed_in(ui)
    own = ui.base
    refused = [
        edit(http, memory_id, token),  # no Origin
        edit(http, memory_id, token, Origin="http://evil.example"),
        edit(http, memory_id, token, Origin="null"),
        edit(http, memory_id, token, Origin=own, **{"Sec-Fetch-Site": "cross-site"}),
        edit(http, memory_id, None, Origin=own),  # no token
        edit(http, memory_id, ("y" if token[0] == "x" else "x") + token[1:], Origin=own),
        http.post(f"/memory/{memory_id}/edit", content=b'{"content": "x"}', headers={
            "Origin": own, "Content-Type": "application/json"}),
        http.post("/forget", data={"id": str(memory_id)}, headers={"Origin": own}),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403, 403, 403, 415, 403]
    assert content(client, workspace, memory_id) == "The release train leaves on Tuesdays"
    # the same request with all of it goes through, and the header form of the token works
    done = edit(http, memory_id, token, Origin=own)
    assert done.status_code == 303 and content(client, workspace, memory_id).endswith("Fridays")
    back = http.post(f"/memory/{memory_id}/edit", headers={"Origin": own, "X-CSRF-Token": token},
                     data={"content": "The release train leaves on Tuesdays", "tags": "",
                           "importance": "3"})
    assert back.status_code == 303
    assert content(client, workspace, memory_id) == "The release train leaves on Tuesdays"


def test_every_answer_carries_the_policy(served):
    ui = served[0]
    http, _ = signed_in(ui)
    for path in ("/", "/static/workbench.js", "/memory/999999", "/nowhere"):
        headers = http.get(path).headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, path
        assert "frame-ancestors 'none'" in policy and headers["x-frame-options"] == "DENY"
        assert headers["cache-control"] == "no-store"
    assert httpx.get(ui.base + "/").headers["content-security-policy"]  # the 401 too


def test_oversized_bodies_and_redirects_elsewhere_are_refused(served):
    ui, client, workspace, memory_id = served
    http, token = signed_in(ui)
    huge = http.post(f"/memory/{memory_id}/edit", headers={"Origin": ui.base},
                     data={"csrf": token, "content": "x" * (5 * 1024 * 1024)})
    assert huge.status_code == 413
    for back in ("//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:x"):
        done = http.post(f"/memory/{memory_id}/share", headers={"Origin": ui.base},
                         data={"csrf": token, "unshare": "1", "back": back})
        assert done.status_code == 303 and done.headers["location"].startswith(
            f"{http.base_url.path.rstrip('/')}/memory/{memory_id}?"), back
    assert content(client, workspace, memory_id) == "The release train leaves on Tuesdays"


def test_hostile_query_values_are_pages_not_tracebacks(served):
    ui, client, workspace, memory_id = served
    http, token = signed_in(ui)
    for path in ("/?page=-5", "/?page=99999999999999999999", "/?category=<script>",
                 "/?order=drop", "/?q=" + "x" * 5000, "/?tag=" + "t" * 500, "/forget?id=abc",
                 "/forget?id=99999999999999999999", "/?ws=/etc", "/?ws=../../etc",
                 "/memory/0", "/review?page=abc"):
        answer = http.get(path)
        assert answer.status_code in (200, 400, 404), (path, answer.status_code)
        assert "Traceback" not in answer.text and "<script>" not in answer.text, path
    bad = http.post(f"/memory/{memory_id}/edit", headers={"Origin": ui.base},
                    data={"csrf": token, "content": "x", "importance": "lots"})
    assert bad.status_code == 400
    assert content(client, workspace, memory_id) == "The release train leaves on Tuesdays"


class _Neighbour(http.server.BaseHTTPRequestHandler):
    """Another local server (another port of 127.0.0.1): what the browser sends it is
    recorded, as a hostile server would record it."""
    seen: list[tuple[str, str]] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        self.seen.append((self.path, self.headers.get("Cookie", "")))
        page = b'<!DOCTYPE html><title>n</title><link rel="icon" href="/favicon.ico">' \
               b'<img src="/pixel.png" alt="">'
        self.send_response(200 if self.path == "/" else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


@pytest.fixture
def neighbour():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Neighbour)
    _Neighbour.seen = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], _Neighbour.seen
    server.shutdown()
    server.server_close()


def test_a_cookie_another_local_port_receives_opens_nothing(served, chromium, neighbour):
    """Cookies are not kept apart by port: a page of any server on 127.0.0.1 receives what the
    browser holds for the workbench (on its favicon, an image). Replayed to the workbench,
    with its own Host, it must read and change nothing; nor may the browser's own cookie jar,
    sent from outside the page; while the browser itself keeps working."""
    ui, client, workspace, memory_id = served
    port, seen = neighbour
    browser = selenium_chrome()
    try:
        browser.get(ui.url)
        WebDriverWait(browser, 20).until(lambda b: "release train" in b.page_source)
        home = browser.current_url.split("?")[0].rstrip("/")
        browser.get(f"http://127.0.0.1:{port}/")
        WebDriverWait(browser, 20).until(lambda _: any(p != "/" for p, _ in seen))
        jar = browser.execute_cdp_cmd("Network.getAllCookies", {})["cookies"]  # HttpOnly too
        held = "; ".join(f"{c['name']}={c['value']}" for c in jar)
        assert held, "the browser holds no cookie for the workbench"
        replayed = {cookie for _, cookie in seen if cookie} | {held}
        guessable = ("/", f"/memory/{memory_id}", "/changes", "/static/workbench.js",
                     "/favicon.ico", "/review")
        for cookie in replayed:
            for path in guessable:
                answer = httpx.get(ui.base + path, headers={"Cookie": cookie})
                assert answer.status_code in (401, 403, 404), (cookie, path, answer.status_code)
                assert "release train" not in answer.text and "data-csrf" not in answer.text
            change = httpx.post(f"{ui.base}/memory/{memory_id}/edit", headers={
                "Cookie": cookie, "Origin": ui.base}, data={
                "content": "The release train leaves on Fridays", "importance": "3"})
            assert change.status_code in (401, 403, 404), (cookie, change.status_code)
        assert content(client, workspace, memory_id) == "The release train leaves on Tuesdays"
        # the browser, back on the workbench, still reads and changes
        browser.get(f"{home}/memory/{memory_id}")
        box = WebDriverWait(browser, 20).until(
            lambda b: b.find_elements(By.NAME, "content") or False)[0]
        box.clear()
        box.send_keys("The release train leaves on Mondays")
        box.submit()
        WebDriverWait(browser, 20).until(
            lambda _: content(client, workspace, memory_id).endswith("Mondays"))
    finally:
        browser.quit()
        client.call_tool("memory_update", {"id": memory_id, "content": "The release train "
                                           "leaves on Tuesdays"}, str(workspace))
