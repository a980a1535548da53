"""Issue 41 end to end, with the real git CLI and a real daemon: every worktree of a
repository shares one memory (the branch and worktree of each memory shown, the current
branch ranked first), a worktree kept apart when asked, a repository moved on disk keeps
its memory, a worktree's own earlier database is merged once with nothing lost; the
personal tier is recalled in every project and never leaks to a team folder; other
projects are searched only when named."""
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support import BIN, Daemon, git

from memnest_shims.errors import ToolFailure

BILLING_MAIN = ("Billing retries: failed card payments are retried with exponential backoff "
                "starting at two seconds")
BILLING_FEATURE = ("Billing retries: failed card payments are retried at most five times "
                   "before the invoice is marked unpaid")


def _repo(root: Path) -> Path:
    repo = root / "repo"
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main", str(repo))
    (repo / "billing.py").write_text("def retry():\n    return 2\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    return repo.resolve()


def _worktree(repo: Path, where: Path, branch: str) -> Path:
    """A linked worktree on a new branch with a commit of its own (so its memories come from
    a branch main has not merged)."""
    git(repo, "worktree", "add", "-q", "-b", branch, str(where))
    (where / "billing.py").write_text("def retry():\n    return 5\n")
    git(where, "commit", "-qam", f"work on {branch}")
    return where.resolve()


@pytest.fixture
def worktrees(tmp_path):
    repo = _repo(tmp_path)
    feature = _worktree(repo, tmp_path / "elsewhere" / "wt-feature", "feature")
    return repo, feature


def _ids(found: dict) -> list[int]:
    return [r["id"] for r in found["results"]]


def test_worktrees_share_one_memory_with_branch_and_ranking(call, worktrees):
    repo, feature = worktrees
    stored = call("memory_store", ws=feature, content=BILLING_FEATURE, category="decision")
    mine = call("memory_store", ws=repo, content=BILLING_MAIN, category="decision")
    assert stored["status"] == "stored" and mine["status"] == "stored"

    stats = call("memory_stats", ws=feature)
    assert stats["workspace"] == str(repo)
    assert stats["resolved"]["checkout"] == str(feature)
    assert "worktree" in stats["resolved"]["why"] and stats["resolved"]["worktree"]

    # from the main checkout the feature's memory is found, with its branch and worktree,
    # and ranked below the memory of the branch checked out here
    found = call("memory_search", ws=repo, query="how are failed card payments retried")
    hits = {r["id"]: r for r in found["results"]}
    assert stored["id"] in hits and mine["id"] in hits
    assert hits[stored["id"]]["branch"] == "feature"
    assert hits[stored["id"]]["worktree"] == str(feature)
    assert hits[mine["id"]]["branch"] == "main" and "worktree" not in hits[mine["id"]]
    assert _ids(found).index(mine["id"]) < _ids(found).index(stored["id"])
    assert hits[stored["id"]]["code"]["branch"]["written_on"] == "feature"

    # and from the worktree, the main checkout's memory is there too: one memory
    back = call("memory_search", ws=feature, query="how are failed card payments retried")
    assert {stored["id"], mine["id"]} <= set(_ids(back))


def test_a_worktree_can_keep_its_own_memory(call, worktrees, tmp_path):
    repo, feature = worktrees
    apart = _worktree(repo, tmp_path / "wt-apart", "apart")
    (apart / ".memnest").mkdir()
    (apart / ".memnest" / "own-memory").write_text("")
    kept = call("memory_store", ws=apart, content="The apart worktree tries a new queue design "
                "with Redis streams", category="decision")
    stats = call("memory_stats", ws=apart)
    assert stats["workspace"] == str(apart) and "own memory" in stats["resolved"]["why"]
    for ws in (repo, feature):
        found = call("memory_search", ws=ws, query="queue design with Redis streams")
        assert kept["id"] not in [r["id"] for r in found["results"]
                                  if r["workspace"] == str(apart)]
        assert all(r["workspace"] != str(apart) for r in found["results"])


def test_a_planted_git_file_cannot_lead_to_another_project(call, tmp_path):
    victim = _repo(tmp_path / "victim-root")
    secret = call("memory_store", ws=victim, content="The staging database password rotates "
                  "every Friday at noon", category="learning")
    hostile = tmp_path / "hostile"
    fake = hostile / "fake-gitdir"
    fake.mkdir(parents=True)
    (fake / "commondir").write_text(str(victim / ".git") + "\n")
    (fake / "gitdir").write_text(str(hostile / ".git") + "\n")
    (hostile / ".git").write_text(f"gitdir: {fake}\n")
    stats = call("memory_stats", ws=hostile.resolve())
    assert stats["workspace"] == str(hostile.resolve())
    assert "kept apart" in stats["resolved"]["why"]
    found = call("memory_search", ws=hostile.resolve(), query="staging database password")
    assert secret["id"] not in [r["id"] for r in found["results"]
                                if r["workspace"] == str(victim)]
    assert all(r["workspace"] != str(victim) for r in found["results"])


def test_a_moved_repository_keeps_its_memory(fresh_daemon, tmp_path):
    repo = _repo(tmp_path / "old-place")
    fresh_daemon.start()
    client = fresh_daemon.client()
    stored = client.call_tool("memory_store", {"content": "Deploys go out from the release "
                                               "branch every Tuesday", "category": "decision"},
                              str(repo))
    (repo / "AGENTS.md").write_text("- The API gateway terminates TLS for every service\n")
    client.call_tool("memory_import", {"from": "agents-md", "follow": True}, str(repo))
    moved = (tmp_path / "new-place" / "renamed-repo")
    moved.parent.mkdir()
    shutil.move(str(repo), str(moved))  # while the daemon holds its database open
    moved = moved.resolve()
    found = client.call_tool("memory_search", {"query": "when do deploys go out"}, str(moved))
    assert stored["id"] in _ids(found)
    assert found["results"][0]["workspace"] == str(moved)
    # what the workspace followed came along: an edit of its AGENTS.md comes in
    (moved / "AGENTS.md").write_text("- The API gateway terminates TLS for every service\n"
                                     "- Rate limits are enforced at the gateway per tenant\n")
    time.sleep(2.2)  # a followed source is looked at every 2 s at most
    client.call_tool("memory_stats", {}, str(moved))
    listed = client.call_tool("memory_list", {"limit": 50}, str(moved))["memories"]
    assert any("per tenant" in m["content"] for m in listed), listed
    fresh_daemon.stop()
    fresh_daemon.start()  # what the database kept
    client = fresh_daemon.client()
    again = client.call_tool("memory_get", {"id": stored["id"]}, str(moved))
    assert again["workspace"] == str(moved)
    assert client.call_tool("memory_stats", {}, str(moved))["memories"] == 3


def test_worktree_databases_are_merged_once_with_nothing_lost(fresh_daemon, tmp_path):
    repo = _repo(tmp_path)
    one = _worktree(repo, tmp_path / "wt-one", "one")
    two = _worktree(repo, tmp_path / "wt-two", "two")
    fresh_daemon.env["MEMNEST_WORKTREES"] = "own"  # as before worktrees shared a memory
    fresh_daemon.start()
    client = fresh_daemon.client()
    texts = {one: ["Worktree one found that the cache key must include the tenant id",
                   "The billing service retries card payments five times"],
             two: ["Worktree two chose SQLite for the local test database",
                   "The billing service retries card payments five times"]}
    made = {}
    for ws, contents in texts.items():
        for text in contents:
            made[text, ws] = client.call_tool(
                "memory_store", {"content": text, "category": "learning"}, str(ws),
                origin={"via": "cli", "client": "scope-test", "session": ws.name})["id"]
    a, b = made[texts[one][0], one], made[texts[one][1], one]
    client.call_tool("memory_relate", {"from_id": a, "to_id": b,
                                       "relationship": "RELATED_TO"}, str(one))
    fresh_daemon.stop()

    fresh_daemon.env.pop("MEMNEST_WORKTREES")
    fresh_daemon.start()
    client = fresh_daemon.client()
    for ws in (one, two):
        client.call_tool("memory_stats", {}, str(ws))  # the first call merges it
    stats = client.call_tool("memory_stats", {}, str(repo))
    reports = {r["worktree"]: r for r in stats["worktree_merges"]}
    assert set(reports) == {str(one), str(two)}
    assert reports[str(one)]["memories"] == 2 and reports[str(one)]["stored"] == 2
    assert reports[str(two)]["duplicates"] + reports[str(two)]["merged"] == 1
    assert reports[str(one)]["links"] == 1
    listed = client.call_tool("memory_list", {"limit": 50}, str(repo))["memories"]
    assert sorted(m["content"] for m in listed) == sorted(
        {t for contents in texts.values() for t in contents})
    fresh_daemon.stop()
    fresh_daemon.start()  # read back after a restart; no second merge
    client = fresh_daemon.client()
    client.call_tool("memory_stats", {}, str(one))
    stats = client.call_tool("memory_stats", {}, str(repo))
    assert len(stats["worktree_merges"]) == 2 and stats["memories"] == 3
    full = client.call_tool("memory_list", {"limit": 50}, str(repo))["memories"]
    got = client.call_tool("memory_get", {"ids": [m["id"] for m in full]}, str(repo))
    by_text = {m["content"]: m for m in got["memories"]}
    tenant = by_text[texts[one][0]]
    assert tenant["worktree"] == str(one) and tenant["branch"] == "one"
    assert tenant["origin"] == {"via": "cli", "client": "scope-test", "session": "wt-one"}
    assert [e["type"] for e in tenant["edges"]] == ["RELATED_TO"]


# -- the personal tier ------------------------------------------------------------------------
# A daemon of their own: a personal memory is recalled in every workspace, and the shared
# daemon's other tests must not meet one.

@pytest.fixture(scope="module")
def own_daemon(tmp_path_factory):
    d = Daemon(tmp_path_factory.mktemp("personal-daemon"))
    d.start()
    yield d
    d.stop()


@pytest.fixture
def pcall(own_daemon):
    client = own_daemon.client()

    def _call(tool: str, ws: Path, **arguments):
        return client.call_tool(tool, arguments, str(ws))
    yield _call
    client.close()


PREFERENCE = "I prefer pytest over unittest and want British English in every answer"


def test_a_personal_memory_is_recalled_in_every_project(pcall, tmp_path):
    a, b = (tmp_path / "project-a").resolve(), (tmp_path / "project-b").resolve()
    a.mkdir(), b.mkdir()
    mine = pcall("memory_store", ws=a, content=PREFERENCE, category="preference", scope="user")
    assert mine["id"] > 10_000_000_000
    project = pcall("memory_store", ws=a, content="Project A renders its charts with Vega-Lite",
                   category="decision")
    found = pcall("memory_search", ws=b, query="which test framework do I prefer")
    hit = next(r for r in found["results"] if r["id"] == mine["id"])
    assert hit["scope"] == "user"
    charts = pcall("memory_search", ws=b, query="how are charts rendered")
    assert project["id"] not in [r["id"] for r in charts["results"] if r["workspace"] == str(a)]
    named = pcall("memory_search", ws=b, query="how are charts rendered", workspaces=[str(a)])
    assert named["workspaces_searched"] == [str(a)]
    from_a = [r for r in named["results"] if r.get("from_workspace") == str(a)]
    assert project["id"] in [r["id"] for r in from_a]
    # read, changed and listed by its shown id, from any project
    assert pcall("memory_get", ws=b, id=mine["id"])["scope"] == "user"
    listed = pcall("memory_list", ws=b, scope="user")["memories"]
    assert mine["id"] in [m["id"] for m in listed]
    pcall("memory_update", ws=b, id=mine["id"], importance=5)
    assert pcall("memory_get", ws=a, id=mine["id"])["importance"] == 5
    # it cannot be shared with a team
    with pytest.raises(ToolFailure) as refused:
        pcall("memory_update", ws=a, id=mine["id"], scope="shared")
    assert "personal" in refused.value.message
    with pytest.raises(ToolFailure) as refused:
        pcall("memory_share", ws=a, id=mine["id"])
    assert "never shared" in refused.value.message
    assert not (a / ".memnest" / "shared").exists() or not any(
        PREFERENCE[:20] in p.read_text() for p in (a / ".memnest" / "shared").rglob("*")
        if p.is_file())
    pcall("memory_delete", ws=b, id=mine["id"])
    assert pcall("memory_get", ws=a, ids=[mine["id"]])["missing"] == [mine["id"]]


def test_a_workspace_memory_moves_to_the_personal_tier(pcall, tmp_path):
    a = (tmp_path / "project-move").resolve()
    a.mkdir()
    made = pcall("memory_store", ws=a, content="Always run the formatter before committing "
                "any change", category="preference")
    moved = pcall("memory_update", ws=a, id=made["id"], scope="user")
    assert moved["moved_to"] > 10_000_000_000
    assert pcall("memory_get", ws=a, ids=[made["id"]])["missing"] == [made["id"]]
    assert pcall("memory_get", ws=a, id=moved["moved_to"])["content"].startswith("Always run")
    with pytest.raises(ToolFailure):
        pcall("memory_update", ws=a, id=moved["moved_to"], scope="user", importance=4)
    pcall("memory_delete", ws=a, id=moved["moved_to"])


def test_the_personal_folder_is_no_workspace(pcall, own_daemon):
    personal = Path(own_daemon.env["MEMNEST_USER_DIR"])
    personal.mkdir(parents=True, exist_ok=True)
    with pytest.raises(ToolFailure) as refused:
        pcall("memory_search", ws=personal, query="anything")
    assert refused.value.code == "permission_denied"


def test_a_hostile_workspaces_argument_is_refused_clearly(pcall, tmp_path):
    a = (tmp_path / "project-h").resolve()
    a.mkdir()
    for bad in (["relative/path"], ["/etc"], ["*", str(a)], [str(tmp_path / "missing")]):
        with pytest.raises(ToolFailure) as refused:
            pcall("memory_search", ws=a, query="anything", workspaces=bad)
        assert refused.value.code in ("invalid_argument", "permission_denied")
    everywhere = pcall("memory_search", ws=a, query="anything", workspaces=["*"])
    assert isinstance(everywhere["workspaces_searched"], list)
    assert json.dumps(everywhere)  # a plain answer


def test_hooks_recall_the_personal_tier_in_another_project(pcall, own_daemon, tmp_path):
    a, b = (tmp_path / "hook-a").resolve(), (tmp_path / "hook-b").resolve()
    a.mkdir(), b.mkdir()
    mine = pcall("memory_store", ws=a, content="Never push directly to the main branch; open "
                 "a pull request", category="preference", scope="user", importance=5)
    env = {**own_daemon.env, "CLAUDE_PROJECT_DIR": str(b), "MEMNEST_HOOK_BUDGET_MS": "20000"}
    start = _hook("session-start", {"session_id": "p1", "cwd": str(b), "source": "startup",
                                    "hook_event_name": "SessionStart"}, env, b)
    assert f"[#{mine['id']} preference, personal," in start
    prompt = _hook("prompt", {"session_id": "p2", "cwd": str(b), "transcript_path": "",
                              "hook_event_name": "UserPromptSubmit",
                              "prompt": "may I push straight to the main branch?"}, env, b)
    assert f"[#{mine['id']} " in prompt
    pcall("memory_delete", ws=a, id=mine["id"])


def test_the_hook_debug_log_names_the_resolved_workspace(call, daemon, worktrees):
    repo, feature = worktrees
    call("memory_store", ws=feature, content="The feature worktree keeps its fixtures in "
         "tests/data", category="learning")
    env = {**daemon.env, "CLAUDE_PROJECT_DIR": str(feature), "MEMNEST_HOOK_BUDGET_MS": "20000",
           "MEMNEST_HOOK_DEBUG": "1"}
    _hook("prompt", {"session_id": "d1", "cwd": str(feature), "transcript_path": "",
                     "hook_event_name": "UserPromptSubmit",
                     "prompt": "where are the test fixtures kept?"}, env, feature)
    log = (daemon.log.parent / "hooks.log").read_text()
    assert f"workspace {feature} -> {repo} (git worktree" in log


def _hook(event: str, payload: dict, env: dict, cwd: Path) -> str:
    out = subprocess.run([str(BIN / "memnest-hook"), event], input=json.dumps(payload).encode(), env=env,
                         cwd=str(cwd), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] \
        if out.stdout.strip() else ""


def test_the_personal_database_is_no_db_path(own_daemon, tmp_path):
    """Issue 55 (10): memory_set_workspace (or the request's db_path) naming the personal
    tier's database file would open it as a workspace's, team folder and all."""
    personal = Path(own_daemon.env["MEMNEST_USER_DIR"]) / ".memnest" / "memory.lbug"
    client = own_daemon.client()
    try:
        client.call_tool("memory_store", {"content": "I like short commit subjects",
                                          "scope": "user"}, str(tmp_path))
        assert personal.exists()
        for call in (lambda: client.call_tool("memory_set_workspace",
                                              {"workspace": str(tmp_path),
                                               "db_path": str(personal)}, str(tmp_path)),
                     lambda: client.call_tool("memory_list", {}, str(tmp_path),
                                              str(personal))):
            with pytest.raises(ToolFailure) as refused:
                call()
            assert refused.value.code == "permission_denied"
            assert "personal tier" in refused.value.message
    finally:
        client.close()


def test_the_personal_tier_is_exported_and_comes_back(pcall, tmp_path):
    a = (tmp_path / "project-x").resolve()
    a.mkdir()
    made = [pcall("memory_store", ws=a, content=text, category="preference", scope="user",
                  tags=["habits"])["id"]
            for text in ("Write commit messages in the imperative mood",
                         "Prefer small pull requests that do one thing")]
    out = pcall("memory_export", ws=a, personal=True)
    assert out["memories"] >= 2 and ".memnest" in out["path"] and str(a) not in out["path"]
    exported = json.loads(Path(out["path"]).read_text())
    assert {m["content"] for m in exported["memories"]} >= {
        "Write commit messages in the imperative mood",
        "Prefer small pull requests that do one thing"}
    pcall("memory_delete", ws=a, ids=made)
    with pytest.raises(ToolFailure) as refused:
        pcall("memory_import", ws=a, path="relative.json", personal=True)
    assert "absolute" in refused.value.message
    with pytest.raises(ToolFailure):
        pcall("memory_import", ws=a, **{"from": "agents-md", "personal": True})
    back = pcall("memory_import", ws=a, path=out["path"], personal=True)
    assert back["memories"]["stored"] >= 2
    listed = pcall("memory_list", ws=a, scope="user")["memories"]
    assert {"Write commit messages in the imperative mood",
            "Prefer small pull requests that do one thing"} <= {m["content"] for m in listed}
    assert pcall("memory_stats", ws=a)["memories"] == 0  # nothing landed in the workspace
    pcall("memory_delete", ws=a, ids=[m["id"] for m in listed])
