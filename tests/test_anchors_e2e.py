"""Issue 21 end to end: memories citing code in a real git repository (git CLI), then commits
that edit, move, rename and delete the cited code, and a branch switch; each recall carries
the right state, stale memories rank below fresh ones, memory_stale lists them and
memory_update refreshes them; what the database kept survives a restart; and the user's
files are never touched."""
import hashlib
import subprocess
from pathlib import Path

import pytest

HTTP = '''import time


def send(request, retries=3):
    """Send with retries."""
    for attempt in range(retries):
        try:
            return request()
        except OSError:
            time.sleep(2 ** attempt)
    raise TimeoutError("gave up")


def close():
    return None
'''

APP = """import os

CACHE_KEY = "tenant:{tenant_id}:{user_id}"
CACHE_TTL = 300


def main():
    return CACHE_KEY
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                          text=True).stdout


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A", "--", ".", ":!.memnest")
    git(repo, "commit", "-q", "-m", message)


def user_files(repo: Path) -> dict[str, str]:
    """Every file of the user's (not memnest's own .memnest/) with its hash, and git's view."""
    files = {str(p.relative_to(repo)): hashlib.sha256(p.read_bytes()).hexdigest()
             for p in sorted(repo.rglob("*")) if p.is_file()
             and ".memnest" not in p.parts and ".git" not in p.parts}
    files["<git status>"] = git(repo, "status", "--porcelain", "--", ".", ":!.memnest")
    files["<HEAD>"] = git(repo, "rev-parse", "HEAD")
    return files


@pytest.fixture
def repo(tmp_path) -> Path:
    root = (tmp_path / "repo").resolve()
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "Tester")
    (root / "client").mkdir()
    (root / "client" / "http.py").write_text(HTTP)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(APP)
    (root / "src" / "config.py").write_text("LEVEL = 'info'\n")
    commit(root, "initial")
    return root


@pytest.fixture
def ctl(fresh_daemon, repo):
    fresh_daemon.start()
    client = fresh_daemon.client()

    def call(tool: str, **arguments):
        before = user_files(repo)
        result = client.call_tool(tool, arguments, str(repo))
        assert user_files(repo) == before, f"{tool} changed the user's files"
        return result
    yield call
    client.close()


def code_of(result: dict, memory_id: int) -> dict:
    items = result.get("results") or result.get("memories") or [result]
    return next(r for r in items if r["id"] == memory_id).get("code", {})


def test_anchored_memories_follow_their_code(repo, ctl, fresh_daemon):
    retries = ctl("memory_store", content="Retries live in `send()` in client/http.py: "
                  "three attempts with exponential backoff.")["id"]
    cache = ctl("memory_store", content="The cache key includes the tenant id.",
                anchors=[{"path": "src/app.py", "lines": "3"}])["id"]
    config = ctl("memory_store", content="Log level is set in src/config.py")["id"]
    got = ctl("memory_get", ids=[retries, cache, config])
    for memory_id, cites in ((retries, "send() in client/http.py"), (cache, "src/app.py:3"),
                             (config, "src/config.py")):
        code = code_of(got, memory_id)
        assert code["state"] == "fresh", code
        assert [a["cites"] for a in code["anchors"]] == [cites]

    # Lines inserted above the cited line: the same line is now elsewhere -> moved, and the
    # memory is re-anchored there, so the next recall says fresh at the new place.
    (repo / "src" / "app.py").write_text("# header\n# more\n" + APP)
    commit(repo, "header")
    code = code_of(ctl("memory_get", id=cache), cache)
    assert code["state"] == "moved" and code["anchors"][0]["now_at"] == "src/app.py:5", code
    code = code_of(ctl("memory_get", id=cache), cache)
    assert code["state"] == "fresh" and code["anchors"][0]["cites"] == "src/app.py:5", code

    # The cited function's body changes -> changed, with a diff summary, ranked below a
    # fresh memory that says much the same.
    fresh = ctl("memory_store", content="Retries: three attempts with exponential backoff "
                "when sending requests.", auto_anchor=False, keep_as_is=True)["id"]
    (repo / "client" / "http.py").write_text(HTTP.replace("retries=3", "retries=5"))
    commit(repo, "five retries")
    found = ctl("memory_search", query="retries exponential backoff attempts", top_k=5)
    ids = [r["id"] for r in found["results"]]
    assert ids.index(fresh) < ids.index(retries)
    code = code_of(found, retries)
    assert code["state"] == "changed" and "verify" in code
    assert "retries=5" in code["anchors"][0]["diff"], code
    assert "code" not in next(r for r in found["results"] if r["id"] == fresh)

    # A rename committed with git mv -> moved to the new path.
    git(repo, "mv", "src/config.py", "src/settings.py")
    commit(repo, "rename config")
    code = code_of(ctl("memory_get", id=config), config)
    assert code["state"] == "moved" and code["anchors"][0]["now_at"] == "src/settings.py"

    # The file deleted -> deleted.
    (repo / "src" / "settings.py").unlink()
    commit(repo, "drop settings")
    code = code_of(ctl("memory_get", id=config), config)
    assert code["state"] == "deleted" and "verify" in code

    # memory_stale lists them by file; refreshing the one that still holds makes it fresh,
    # and drops the anchor whose code is gone.
    stale = ctl("memory_stale")
    assert stale["stale"] == 2
    by_file = {f["path"]: [m["id"] for m in f["memories"]] for f in stale["files"]}
    assert by_file == {"client/http.py": [retries], "src/settings.py": [config]}, by_file
    refreshed = ctl("memory_update", updates=[{"id": retries, "refresh_anchors": True},
                                              {"id": config, "refresh_anchors": True}])
    assert refreshed["updated"] == 2
    assert "anchor dropped" in refreshed["results"][1]["anchor_notes"][0]
    assert code_of(ctl("memory_get", id=retries), retries)["state"] == "fresh"
    assert ctl("memory_stale")["stale"] == 0

    # What the database kept survives a restart: the anchors, re-anchored and refreshed.
    fresh_daemon.stop()
    fresh_daemon.start()
    client = fresh_daemon.client()
    got = client.call_tool("memory_get", {"ids": [retries, cache]}, str(repo))
    client.close()
    assert [a["cites"] for a in code_of(got, cache)["anchors"]] == ["src/app.py:5"]
    assert code_of(got, retries)["state"] == "fresh"


def test_memories_from_an_unmerged_branch_are_marked(repo, ctl):
    on_main = ctl("memory_store", content="Deploys go through the staging cluster first.")["id"]
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "feature.txt").write_text("x\n")
    commit(repo, "feature work")
    on_feature = ctl("memory_store", content="Deploys skip staging for hotfix builds.")["id"]
    git(repo, "switch", "-q", "main")
    found = ctl("memory_search", query="deploys staging", top_k=5)
    branch = code_of(found, on_feature).get("branch")
    assert branch and branch["written_on"] == "feature" and branch["merged"] is False
    assert "branch" not in code_of(found, on_main)
    # Once merged, the memory is part of this branch's history.
    git(repo, "merge", "-q", "--no-edit", "feature")
    found = ctl("memory_search", query="deploys staging", top_k=5)
    assert "branch" not in code_of(found, on_feature)


def test_anchor_errors_are_clear_and_hostile_paths_refused(repo, ctl, tmp_path):
    from memnest_shims.client import ToolFailure
    outside = tmp_path / "secret.txt"
    outside.write_text("TOP SECRET\n")
    (repo / "link.py").symlink_to(outside)
    for anchors, words in (([{"path": "nope.py"}], "does not exist"),
                           ([{"path": "src/app.py", "lines": "500"}], "past the end"),
                           ([{"path": "client/http.py", "symbol": "nothing"}], "nothing"),
                           ([{"path": "../secret.txt"}], "outside"),
                           ([{"path": str(outside)}], "relative"),
                           ([{"path": "link.py"}], "symbolic link")):
        with pytest.raises(ToolFailure) as refused:
            ctl("memory_store", content="about code", anchors=anchors)
        assert refused.value.code == "invalid_argument"
        assert words in refused.value.message and "anchors.0" in refused.value.message, \
            refused.value.message
    # Named in the text, a link or an outside path is simply not anchored.
    stored = ctl("memory_store", content="see link.py and ../secret.txt")
    got = ctl("memory_get", id=stored["id"])
    assert "TOP SECRET" not in str(got) and "anchors" not in got.get("code", {})


def test_memnest_ctl_stale_and_search_show_stale_code(repo, ctl, fresh_daemon):
    import json as _json
    from support import BIN
    stored = ctl("memory_store", content="Retries live in `send()` in client/http.py")["id"]
    (repo / "client" / "http.py").write_text(HTTP.replace("retries=3", "retries=5"))
    env = {**fresh_daemon.env}

    def run(*args):
        out = subprocess.run([str(BIN / "memnest-ctl"), *args, "--workspace", str(repo)],
                             env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout
    text = run("stale")
    assert text.startswith("1 of 1 anchored memories") and "client/http.py" in text
    assert f"#{stored}" in text and "changed" in text and "retries=5" in text
    assert _json.loads(run("stale", "--json"))["files"][0]["memories"][0]["id"] == stored
    assert "(code changed: send() in client/http.py)" in run("search", "retries send")


def test_export_and_import_keep_anchors_relative(repo, ctl, tmp_path, fresh_daemon):
    stored = ctl("memory_store", content="The cache key is built in src/app.py:3")["id"]
    path = ctl("memory_export")["path"]
    doc = __import__("json").loads(Path(path).read_text())
    row = next(r for r in doc["memories"] if r["key"] == f"m{stored}")
    assert row["code"]["anchors"][0]["path"] == "src/app.py"
    assert str(repo) not in Path(path).read_text()
    # Another checkout of the same repository gets the memory with its anchors, fresh.
    other = (tmp_path / "other").resolve()
    git(tmp_path, "clone", "-q", str(repo), str(other))
    row["code"]["anchors"].append({"path": "../../etc/passwd"})  # never taken in
    Path(path).write_text(__import__("json").dumps(doc))
    client = fresh_daemon.client()
    client.call_tool("memory_import", {"path": path}, str(other))
    found = client.call_tool("memory_search", {"query": "cache key"}, str(other))
    client.close()
    code = found["results"][0]["code"]
    assert [a["cites"] for a in code["anchors"]] == ["src/app.py:3"]
    assert code["state"] == "fresh"


def test_a_file_cited_whole_reports_its_code_changes(repo, ctl, tmp_path, fresh_daemon):
    """Issue 37: a memory citing a whole file stays fresh through comment edits and says
    `changed` (which definitions, which line, a diff) once the file's code changes and is
    committed; `deleted` once the file is gone. And a symbol cited after its path is
    anchored as the symbol."""
    whole = ctl("memory_store", content="Retries live in client/http.py: three attempts "
                "with exponential backoff.")["id"]
    forms = {text: ctl("memory_store", content=text)["id"] for text in (
        "Retry policy: client/http.py send() tries three times before it gives up.",
        "`send()` in `client/http.py` retries 3 times with a growing sleep.",
        "Timeouts: client/http.py `send()` raises TimeoutError after the last attempt.")}
    got = ctl("memory_get", ids=[whole, *forms.values()])
    assert [a["cites"] for a in code_of(got, whole)["anchors"]] == ["client/http.py"]
    for text, memory_id in forms.items():
        assert [a["cites"] for a in code_of(got, memory_id)["anchors"]] == [
            "send() in client/http.py"], text

    # a comment and blank lines: the code is the same, the memory stays fresh
    (repo / "client" / "http.py").write_text("# The HTTP client.\n\n" + HTTP)
    commit(repo, "a header comment")
    assert code_of(ctl("memory_get", id=whole), whole)["state"] == "fresh"

    # the code changes and is committed: changed, saying what and where
    (repo / "client" / "http.py").write_text(
        "# The HTTP client.\n\n" + HTTP.replace("time.sleep(2 ** attempt)", "time.sleep(1)"))
    commit(repo, "constant backoff")
    found = ctl("memory_search", query="retries exponential backoff attempts", top_k=10)
    code = code_of(found, whole)
    assert code["state"] == "changed" and "verify" in code, code
    anchor = code["anchors"][0]
    assert anchor["cites"] == "client/http.py" and anchor["state"] == "changed"
    assert "changed: `send`" in anchor["detail"] and "line 12" in anchor["detail"], anchor
    assert anchor["diff"] == "-1 +1 lines: `time.sleep(2 ** attempt)` → `time.sleep(1)`"
    got = code_of(ctl("memory_get", id=whole), whole)
    assert got["state"] == "changed" and got["anchors"][0]["diff"] == anchor["diff"]
    for memory_id in forms.values():
        assert code_of(found, memory_id)["state"] == "changed"
    stale = ctl("memory_stale")
    assert whole in [m["id"] for f in stale["files"] for m in f["memories"]]

    # refreshed once the agent has checked it: fresh against the code now
    ctl("memory_update", updates=[{"id": whole, "refresh_anchors": True}])
    assert code_of(ctl("memory_get", id=whole), whole)["state"] == "fresh"

    # the file deleted: deleted
    (repo / "client" / "http.py").unlink()
    commit(repo, "drop the client")
    code = code_of(ctl("memory_get", id=whole), whole)
    assert code["state"] == "deleted" and "no longer exists" in code["anchors"][0]["detail"]


def test_whole_file_anchors_stored_before_issue_37(repo, ctl, fresh_daemon):
    """A whole-file anchor written without a fingerprint of the code (as memnest wrote
    them before): fresh while unchanged, and still right after edits, from git's copy."""
    stored = ctl("memory_store", content="The cache settings live in src/app.py")["id"]
    path = ctl("memory_export")["path"]
    doc = __import__("json").loads(Path(path).read_text())
    row = next(r for r in doc["memories"] if r["key"] == f"m{stored}")
    anchor = row["code"]["anchors"][0]
    assert anchor["path"] == "src/app.py" and anchor.pop("lines_hash") and anchor.pop("outline")
    row["content"] = "Cache settings (old anchor) live in src/app.py"
    doc["memories"] = [row]
    Path(path).write_text(__import__("json").dumps(doc))
    ctl("memory_import", path=path)
    found = ctl("memory_search", query="cache settings old anchor", top_k=5)
    old = next(r for r in found["results"] if r["content"].startswith("Cache settings (old"))
    assert old["code"]["state"] == "fresh"
    (repo / "src" / "app.py").write_text("# settings\n" + APP)
    commit(repo, "comment")
    assert code_of(ctl("memory_get", id=old["id"]), old["id"])["state"] == "fresh"
    (repo / "src" / "app.py").write_text(APP.replace("CACHE_TTL = 300", "CACHE_TTL = 60"))
    commit(repo, "shorter ttl")
    code = code_of(ctl("memory_get", id=old["id"]), old["id"])
    assert code["state"] == "changed", code
    assert code["anchors"][0]["diff"] == "-1 +1 lines: `CACHE_TTL = 300` → `CACHE_TTL = 60`"
