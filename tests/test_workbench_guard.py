"""The workbench as a hostile neighbour sees it: a real `memnest-ctl ui` process, asked over
HTTP without its key, from another Host or Origin, without the CSRF token, with a body too
large or a redirect elsewhere. Each is refused, and the memory it aimed at is unchanged."""
import re

import httpx
import psutil
import pytest

from support import Workbench


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
    """A client holding the session cookie, and the CSRF token of the page it was given."""
    http = httpx.Client(base_url=ui.base, follow_redirects=False)
    answer = http.get(f"/?key={ui.key}")
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
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
            f"/memory/{memory_id}?"), back
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
