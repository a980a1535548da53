"""memnest-ctl, the real binary, from a terminal's point of view: exit codes, human and --json
output, one-line reasons on stderr, and the daemon's lifecycle (start, status, stop)."""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memnest_proto.version import VERSION

from support import OFFLINE_MODEL

CTL = Path(sys.executable).parent / "memnest-ctl"


def ctl(*args: str, env: dict, cwd: Path, stdin: str | None = None,
        timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(CTL), *args], env=env, cwd=str(cwd), input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def one_line_failure(result: subprocess.CompletedProcess, code: int = 1) -> str:
    """Non-zero exit, exactly one line on stderr saying why, no traceback."""
    assert result.returncode == code, \
        f"expected exit {code}, got {result.returncode}: {result.stdout!r} {result.stderr!r}"
    lines = result.stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {result.stderr!r}"
    assert lines[0].startswith("memnest-ctl: "), lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The workspace these tests share (each workspace keeps a database open in the daemon)."""
    return tmp_path_factory.mktemp("ctl-project").resolve()


@pytest.fixture
def run(daemon, project):
    def _run(*args: str, cwd: Path | None = None, stdin: str | None = None):
        return ctl(*args, env=daemon.env, cwd=cwd or project, stdin=stdin)
    return _run


# -- status ----------------------------------------------------------------------------------

def test_version(run):
    assert ok(run("--version")).strip() == f"memnest-ctl {VERSION}"


def test_status_human(daemon, run):
    pid = daemon.client().status().pid
    out = ok(run("status"))
    first = out.splitlines()[0]
    assert first.startswith(f"memnestd {VERSION} ") and f"pid {pid}" in first, out
    assert OFFLINE_MODEL in out
    assert str(daemon.socket) in out and str(daemon.log) in out


def test_status_json(daemon, run):
    facts = json.loads(ok(run("status", "--json")))
    assert facts["running"] is True
    assert facts["version"] == VERSION
    assert facts["pid"] == daemon.client().status().pid
    assert facts["embedding_model"] == OFFLINE_MODEL
    assert facts["embedding_dim"] > 0
    assert facts["socket"] == str(daemon.socket)
    assert isinstance(facts["workspaces"], list)


# -- store, search, stats --------------------------------------------------------------------

def test_store_and_search_human(run):
    text = "The deploy script lives in ops/deploy.sh and needs VAULT_TOKEN set"
    out = ok(run("store", text, "--tag", "ops", "--tag", "Deploy", "--importance", "4",
                 "--category", "decision"))
    match = re.fullmatch(r"stored: memory (\d+) \(importance 4\)\n", out)
    assert match, out
    memory_id = int(match.group(1))

    found = ok(run("search", "where is the deploy script"))
    lines = found.splitlines()
    assert lines, found
    first = lines[0].split()
    assert int(first[0]) == memory_id, found
    assert float(first[1]) > 0
    assert text in lines[0] and "[ops, deploy]" in lines[0], lines[0]

    again = ok(run("store", text))
    assert again == f"duplicate: memory {memory_id} (importance 5)\n"


def test_show_reads_one_memory_in_full_and_says_what_replaced_it(run):
    old = ok(run("store", "Releases are cut from the develop branch", "--json"))
    new = ok(run("store", "Releases are cut from main since the 2026 switch", "--tag", "release",
                 "--json"))
    old_id, new_id = json.loads(old)["id"], json.loads(new)["id"]
    ok(run("relate", str(new_id), str(old_id), "--type", "supersedes"))

    shown = ok(run("show", str(old_id)))
    assert shown.startswith(f"memory {old_id}  general, importance 3, private\n"), shown
    assert f"replaced by {new_id}" in shown, shown
    assert shown.rstrip().endswith("Releases are cut from the develop branch"), shown
    assert "via      cli" in shown, shown
    newer = ok(run("show", str(new_id)))
    assert "tags     release" in newer and f"replaces {old_id}" in newer, newer
    assert json.loads(ok(run("show", str(new_id), "--json")))["supersedes"] == [old_id]

    missing = one_line_failure(run("show", "999999"))
    assert "no memory with id 999999" in missing, missing
    assert run("show", "0").returncode == 2 and run("show", "x").returncode == 2


def test_store_refuses_a_listing_unless_kept_as_is(run):
    listing = "src/app.py\nsrc/db.py\nsrc/jobs/sync.py\ntests/test_sync.py\nREADME.md"
    refused = run("store", listing)
    assert refused.returncode == 1 and "keep_as_is" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert ok(run("store", listing, "--keep-as-is")).startswith("stored: memory ")


def test_store_and_search_json(run, project):
    stored = json.loads(ok(run("store", "Use ruff for linting, not flake8", "--json")))
    assert stored["status"] == "stored" and isinstance(stored["id"], int)
    assert stored["importance"] == 3

    found = json.loads(ok(run("search", "which linter do we use", "--json", "--top-k", "3")))
    assert found["scope"] == "workspace"
    assert found["count"] == len(found["results"]) and 1 <= found["count"] <= 3
    hit = next(r for r in found["results"] if r["id"] == stored["id"])
    assert hit["content"] == "Use ruff for linting, not flake8"
    assert hit["workspace"] == str(project)

    everywhere = json.loads(ok(run("search", "linting", "--global", "--json")))
    assert everywhere["scope"] == "global"


def shared_db(daemon, project) -> dict:
    """The daemon env with MEMORY_DB_PATH on the project's database: other workspaces then
    live in that one file, instead of each opening another database in the shared daemon."""
    return {**daemon.env, "MEMORY_DB_PATH": str(project / ".memnest" / "memory.lbug")}


def test_search_with_no_match_says_so(daemon, project, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    ok(ctl("store", "only in the project", env=daemon.env, cwd=project))
    out = ok(ctl("search", "only in the project", env=shared_db(daemon, project), cwd=empty))
    assert out == "no memories found\n"


def test_store_reads_stdin(run):
    text = "Memories can come from stdin, for long text piped in"
    out = ok(run("store", "-", stdin=text + "\n"))
    memory_id = int(re.fullmatch(r"stored: memory (\d+) \(importance 3\)\n", out).group(1))
    found = json.loads(ok(run("search", "piped from stdin", "--json")))
    assert memory_id in [r["id"] for r in found["results"]]


def test_stats_with_workspace_option(daemon, run, project, tmp_path):
    ok(run("store", "Stats count this memory"))
    client = daemon.client()
    try:
        expected = client.call_tool("memory_list", {}, str(project))["total"]
    finally:
        client.close()
    # Run from somewhere else: --workspace decides, not the current directory.
    stats = json.loads(ok(run("stats", "--workspace", str(project), "--json", cwd=tmp_path)))
    assert stats["workspace"] == str(project)
    assert stats["memories"] == expected >= 1
    assert stats["index_health"]["healthy"] is True
    assert stats["embedding_model"] == OFFLINE_MODEL

    human = ok(run("stats", "--workspace", str(project), cwd=tmp_path))
    assert f"workspace  {project}" in human
    assert re.search(rf"^memories   {expected}\b", human, re.M), human
    assert "healthy" in human


# -- failures: non-zero exit, one line on stderr ---------------------------------------------

def test_store_in_missing_workspace(run):
    result = run("store", "lost", "--workspace", "/does/not/exist")
    line = one_line_failure(result)
    assert "/does/not/exist" in line and "directory" in line, line
    assert result.stdout == ""
    assert not Path("/does/not/exist").exists()


def test_search_empty_query(run):
    line = one_line_failure(run("search", ""))
    assert "query" in line, line


@pytest.mark.parametrize("args,stdin,words", [
    (("store", "   "), None, ["content", "whitespace"]),
    (("store", "-"), "", ["content", "empty"]),
    (("store", "x" * 20001), None, ["20000"]),
    (("search", "   "), None, ["query", "whitespace"]),
    (("stats", "--workspace", "relative/dir"), None, ["relative/dir", "not an existing directory"]),
], ids=["store-whitespace", "store-empty-stdin", "store-oversized", "search-whitespace",
        "stats-relative-missing"])
def test_refused_input_is_one_line(run, args, stdin, words):
    line = one_line_failure(run(*args, stdin=stdin))
    assert all(w in line for w in words), line


# -- lifecycle on a daemon of the test's own -------------------------------------------------

def test_status_when_no_daemon_runs(fresh_daemon, tmp_path):
    line = one_line_failure(ctl("status", env=fresh_daemon.env, cwd=tmp_path))
    assert "not running" in line and str(fresh_daemon.socket) in line, line

    result = ctl("status", "--json", env=fresh_daemon.env, cwd=tmp_path)
    assert result.returncode == 3, result.stderr
    facts = json.loads(result.stdout)
    assert facts["running"] is False and facts["socket"] == str(fresh_daemon.socket)
    assert "not running" in facts["detail"]

    stopped = ctl("stop", env=fresh_daemon.env, cwd=tmp_path)
    assert ok(stopped).strip() == f"memnestd is not running on {fresh_daemon.socket}"
    # Asking did not start one.
    assert not fresh_daemon.socket.exists()
    assert fresh_daemon.pids() == []


def test_start_status_stop(fresh_daemon, tmp_path):
    env = fresh_daemon.env
    started = ok(ctl("start", env=env, cwd=tmp_path))
    match = re.fullmatch(rf"memnestd started: pid (\d+) on {re.escape(str(fresh_daemon.socket))}\n",
                         started)
    assert match, started
    pid = int(match.group(1))
    assert fresh_daemon.socket.exists()
    assert fresh_daemon.pids() == [pid]

    again = ok(ctl("start", env=env, cwd=tmp_path))
    assert again.startswith(f"memnestd already running: pid {pid} "), again
    again_json = json.loads(ok(ctl("start", "--json", env=env, cwd=tmp_path)))
    assert again_json["already_running"] is True and again_json["pid"] == pid

    status = json.loads(ok(ctl("status", "--json", env=env, cwd=tmp_path)))
    assert status["pid"] == pid and status["running"] is True
    assert status["embedding_model"] == OFFLINE_MODEL
    assert fresh_daemon.pids() == [pid]  # no second daemon appeared

    stopped = ok(ctl("stop", env=env, cwd=tmp_path))
    assert stopped == f"memnestd (pid {pid}) stopped\n"
    assert not fresh_daemon.socket.exists()
    # stop returns once the socket is gone; the process finishes closing just after.
    deadline = time.monotonic() + 15
    while fresh_daemon.pids() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fresh_daemon.pids() == []
    line = one_line_failure(ctl("status", env=env, cwd=tmp_path))
    assert "not running" in line


# -- regressions: bugs these tests found -------------------------------------------------

@pytest.mark.parametrize("name,given", [("project", "project"), ("a#b", None)],
                         ids=["relative", "hash-in-name"])
def test_workspace_option_is_taken_literally(daemon, project, tmp_path, name, given):
    parent = tmp_path / "parent"
    (parent / "a").mkdir(parents=True)
    target = (parent / name)
    target.mkdir(exist_ok=True)
    env = shared_db(daemon, project)
    stats = json.loads(ok(ctl("stats", "--workspace", given or str(target), "--json",
                              env=env, cwd=parent)))
    assert stats["workspace"] == str(target.resolve())


def test_export_then_import_into_another_workspace(daemon, run, project, tmp_path):
    ok(run("store", "Exports carry this memory to the next project", "--tag", "moving"))
    target = tmp_path / "exported.json"
    said = ok(run("export", str(target)))
    assert said.startswith("wrote ") and str(target) in said and target.is_file()
    other = (tmp_path / "other").resolve()
    other.mkdir()
    report = json.loads(ok(run("import", str(target), "--workspace", str(other), "--json")))
    assert report["memories"]["in_file"] == report["memories"]["stored"] >= 1
    again = ok(run("import", str(target), "--workspace", str(other)))  # idempotent
    assert f"{other}: " in again and " 0 stored," in again
    found = json.loads(ok(run("search", "next project exports", "--workspace", str(other),
                               "--json")))
    assert any("next project" in r["content"] for r in found["results"])
    assert "missing.json" in one_line_failure(run("import", str(tmp_path / "missing.json")))


@pytest.mark.parametrize("value", ["0", "10000"])
def test_an_out_of_range_number_is_a_usage_error(run, value):
    """Caught before any daemon is asked: exit 2 (a usage error), naming the range."""
    result = run("search", "x", "--top-k", value)
    assert result.returncode == 2 and f"{value} is outside 1-100" in result.stderr
    assert "Traceback" not in result.stderr
