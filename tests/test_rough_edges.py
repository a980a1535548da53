"""Rough edges a new user hit (issue 20): ids a JavaScript client can hold exactly;
reference-server settings that memnestd does not use are refused or named, not ignored; a
client started in a project's subfolder works in the project."""
import json
import subprocess

import anyio
import pytest
from conftest import BIN, result_json
from memnest_daemon.tools import TOOLS
from memnest_shims.client import ToolFailure
from memnest_shims.workspace import enclosing_project

MAX_SAFE_INT = 2**53 - 1  # Number.MAX_SAFE_INTEGER


def _integers(schema, path="") -> list[tuple[str, dict]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "integer":
            found.append((path, schema))
        for key, value in schema.items():
            found += _integers(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for n, value in enumerate(schema):
            found += _integers(value, f"{path}[{n}]")
    return found


def test_every_integer_a_tool_takes_is_exact_in_javascript():
    too_big = [f"{name}{path}: {s.get('maximum')}" for name, tool in TOOLS.items()
               for path, s in _integers(tool.schema)
               if s.get("maximum") is None or s["maximum"] > MAX_SAFE_INT]
    assert not too_big, too_big


def test_an_id_past_the_safe_range_is_a_clear_error(call):
    with pytest.raises(ToolFailure) as refused:
        call("memory_get", id=MAX_SAFE_INT + 1)
    assert refused.value.code == "invalid_argument"
    assert str(MAX_SAFE_INT) in refused.value.message


def test_a_dimension_that_is_not_the_models_is_refused(fresh_daemon):
    fresh_daemon.env["MEMORY_EMBEDDING_DIM"] = "768"
    proc = fresh_daemon.start(wait=False)
    assert proc.wait(timeout=120) == 1
    assert "MEMORY_EMBEDDING_DIM='768', but the model gives 384" in proc.stderr.read()


def test_the_models_own_dimension_is_accepted_and_the_timeout_is_named(fresh_daemon, workspace):
    fresh_daemon.env.update(MEMORY_EMBEDDING_DIM="384", MEMORY_EMBED_TIMEOUT_S="30")
    fresh_daemon.start()
    client = fresh_daemon.client()
    assert client.call_tool("memory_stats", {}, str(workspace))["memories"] == 0
    client.close()
    assert "MEMORY_EMBED_TIMEOUT_S is ignored" in fresh_daemon.log.read_text()



def _ctl(*args, cwd, env):
    return subprocess.run([str(BIN / "memnest-ctl"), *args], cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def repo(tmp_path):
    root = (tmp_path / "repo").resolve()
    (root / ".git").mkdir(parents=True)
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "docs").mkdir()
    return root


def test_the_cli_in_a_subfolder_uses_the_project(daemon, repo):
    env = {k: v for k, v in daemon.env.items() if k != "MEMORY_WORKSPACE"}
    stored = _ctl("store", "The ingest worker retries three times", cwd=repo / "src" / "pkg",
                  env=env)
    assert stored.returncode == 0, stored.stderr
    assert f"workspace {repo}" in stored.stderr
    found = _ctl("search", "ingest worker retries", cwd=repo / "docs", env=env)
    assert "The ingest worker retries three times" in found.stdout
    assert (repo / ".memnest").is_dir()
    assert not (repo / "src" / "pkg" / ".memnest").exists()
    # an explicit workspace still wins
    pinned = _ctl("search", "ingest worker retries", cwd=repo / "docs",
                  env={**env, "MEMORY_WORKSPACE": str(repo / "docs")})
    assert "The ingest worker" not in pinned.stdout


def test_the_shim_in_a_subfolder_uses_the_project(daemon, repo):
    async def body():
        async with daemon.mcp(repo / "src") as s:
            stats = result_json(await s.call_tool("memory_stats", {}))
            assert stats["workspace"] == str(repo), stats
    anyio.run(body)


def test_a_project_with_memnest_but_no_repository_is_found(tmp_path):
    project = tmp_path / "notes"
    (project / ".memnest").mkdir(parents=True)
    (project / "a" / "b").mkdir(parents=True)
    assert enclosing_project(project / "a" / "b") == project.resolve()
    lone = tmp_path / "lone"
    lone.mkdir()
    assert enclosing_project(lone) == lone.resolve()


def test_dreams_review_hints_have_cli_counterparts(daemon, workspace, call):
    env = {k: v for k, v in daemon.env.items() if k != "MEMORY_WORKSPACE"}
    a = call("memory_store", content="The cache TTL for sessions is 30 minutes")["id"]
    b = call("memory_store", content="The cache TTL for sessions is 45 minutes")["id"]
    out = _ctl("relate", str(b), str(a), "--type", "supersedes", cwd=workspace, env=env)
    assert out.returncode == 0, out.stderr
    assert call("memory_get", id=a)["superseded_by"] == [b]
    out = _ctl("unrelate", str(b), str(a), cwd=workspace, env=env)
    assert out.returncode == 0 and "removed 1 link" in out.stdout, out.stdout
    assert call("memory_get", id=a)["superseded_by"] == []
    out = _ctl("keep-separate", str(a), str(b), cwd=workspace, env=env)
    assert out.returncode == 0, out.stderr
    assert call("memory_get", id=a)["kept_separate_from"]
    bad = _ctl("relate", str(a), str(b), "--type", "owns", cwd=workspace, env=env)
    assert bad.returncode == 1 and "relationship" in bad.stderr and "Traceback" not in bad.stderr


def test_a_client_configured_for_another_model_is_told(daemon, workspace, monkeypatch):
    monkeypatch.setenv("MEMORY_EMBEDDING_MODEL", "BAAI/bge-base-en-v1.5")
    client = daemon.client()
    result = client.call_tool("memory_stats", {}, str(workspace))
    client.close()
    assert "BAAI/bge-base-en-v1.5" in result["model_note"]
    assert "memnest/all-MiniLM-L6-v2-int8" in result["model_note"]
    assert "asks for model 'BAAI/bge-base-en-v1.5'" in daemon.log.read_text()
    monkeypatch.setenv("MEMORY_EMBEDDING_MODEL", "memnest/all-MiniLM-L6-v2-int8")
    same = daemon.client()
    assert "model_note" not in same.call_tool("memory_stats", {}, str(workspace))
    same.close()


def test_config_check_reads_the_entry_type_and_the_servers_key(tmp_path, workspace, daemon):
    env = {**daemon.env, "HOME": str(tmp_path)}
    vscode = workspace / ".vscode" / "mcp.json"
    assert _ctl("config", "vscode", cwd=workspace, env=env).returncode == 0
    document = json.loads(vscode.read_text())
    document["servers"]["memnest"]["type"] = "sse"
    document["mcpServers"] = {"memnest": {"command": "x"}}
    vscode.write_text(json.dumps(document))
    checked = _ctl("config", "vscode", "--check", cwd=workspace, env=env)
    assert checked.returncode == 1
    assert "FAIL  type: the entry's type is 'sse'" in checked.stdout
    assert 'FAIL  servers key' in checked.stdout
    document["servers"]["memnest"]["args"] = ["--old-flag"]
    vscode.write_text(json.dumps(document))
    rewritten = _ctl("config", "vscode", cwd=workspace, env=env)
    assert "note     " in rewritten.stdout and '"mcpServers"' in rewritten.stdout
    assert "args ['--old-flag'] were replaced" in rewritten.stdout
    assert json.loads(vscode.read_text())["servers"]["memnest"]["type"] == "stdio"
