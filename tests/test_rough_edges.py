"""Rough edges a new user hit (issue 20): ids a JavaScript client can hold exactly;
reference-server settings that memnestd does not use are refused or named, not ignored; a
client started in a project's subfolder works in the project."""
import json
import subprocess

import anyio
import pytest
from support import BIN, result_json
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


def test_a_daemon_that_cannot_start_is_a_defined_json_rpc_error(fresh_daemon, workspace):
    from mcp.shared.exceptions import MCPError
    fresh_daemon.env["MEMORY_EMBEDDING_DIM"] = "768"  # memnestd refuses to start with it

    async def run():
        # The daemon runs the MCP session, so the editor learns it at initialize.
        with pytest.raises(BaseException) as failed:  # the SDK's task groups wrap it
            async with fresh_daemon.mcp(workspace):
                pass
        error = failed.value
        while isinstance(error, BaseExceptionGroup):
            error = error.exceptions[0]
        assert isinstance(error, MCPError), repr(failed.value)
        assert error.code == -32603  # JSON-RPC's internal error, not 0
        assert "memnest daemon unavailable" in error.message
        assert "MEMORY_EMBEDDING_DIM" in error.message
    anyio.run(run)


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


def _subcommands():
    from memnest_shims.cli.main import build_parser
    parser = build_parser()
    action = next(a for a in parser._actions if a.choices and "status" in a.choices)
    return action.choices


def test_every_subcommand_help_says_what_it_does_and_its_defaults():
    import argparse
    for name, sub in _subcommands().items():
        text = sub.format_help()
        paragraphs = text.split("\n\n")
        assert len(paragraphs) > 2 and not paragraphs[1].startswith(("options:", "positional")), \
            f"`{name} --help` has no description:\n{text}"
        for action in sub._actions:
            if action.help in (None, argparse.SUPPRESS) or not action.option_strings:
                continue
            if action.default not in (None, False, argparse.SUPPRESS):
                help_text = sub._get_formatter()._expand_help(action)
                assert "default" in help_text, f"{name} {action.option_strings}: {help_text}"
        for action in sub._actions:  # positionals say what they take, not just their name
            if not action.option_strings and action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


def test_cli_numbers_say_and_enforce_their_range():
    search = _subcommands()["search"].format_help()
    assert "--top-k 1-100" in search and "(default: 10)" in search
    out = subprocess.run([str(BIN / "memnest-ctl"), "search", "x", "--top-k", "500"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "500 is outside 1-100" in out.stderr
    out = subprocess.run([str(BIN / "memnest-ctl"), "store", "x", "--importance", "nine"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "'nine' is not a whole number" in out.stderr


def test_config_backups_stay_out_of_the_project_root_and_out_of_git(tmp_path, daemon):
    root = tmp_path / "project"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = {**daemon.env, "HOME": str(tmp_path)}
    mcp = root / ".mcp.json"
    for n in range(8):  # each run finds the file changed by hand, so each makes a backup
        mcp.write_text(json.dumps({"mcpServers": {"other": {"command": f"x{n}"}}}))
        assert _ctl("config", "claude-code", "--no-hooks", cwd=root, env=env).returncode == 0
    assert sorted(p.name for p in root.iterdir()) == [".git", ".mcp.json", ".memnest"]
    folder = root / ".memnest" / "backups"
    kept = sorted(folder.glob(".mcp.json.memnest-backup-*"))
    assert len(kept) == 5, kept  # the newest five
    assert json.loads(kept[-1].read_text())["mcpServers"]["other"]["command"] == "x7"
    untracked = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                               cwd=root, capture_output=True, text=True, check=True).stdout
    # .mcp.json names this machine's paths: kept out of commits too, by the repository's own
    # exclude list (never committed), once
    assert "backups" not in untracked and ".mcp.json" not in untracked
    exclude = (root / ".git" / "info" / "exclude").read_text()
    assert exclude.count("/.mcp.json\n") == 1


def test_config_backups_refuse_a_planted_link(tmp_path, daemon):
    root, outside = tmp_path / "project", tmp_path / "outside"
    (root / ".memnest").mkdir(parents=True)
    outside.mkdir()
    (root / ".memnest" / "backups").symlink_to(outside)
    (root / ".mcp.json").write_text('{"mcpServers": {}}')
    env = {**daemon.env, "HOME": str(tmp_path)}
    out = _ctl("config", "claude-code", "--no-hooks", cwd=root, env=env)
    assert out.returncode == 1 and "is a symbolic link" in out.stderr
    assert not any(outside.iterdir())
    assert (root / ".mcp.json").read_text() == '{"mcpServers": {}}'


def test_config_refuses_a_model_memnestd_cannot_load(tmp_path, daemon):
    env = {**daemon.env, "HOME": str(tmp_path)}
    out = _ctl("config", "cursor", "--model", "bge-small", cwd=tmp_path, env=env)
    assert out.returncode == 1 and "not a model memnestd can load" in out.stderr
    assert "BAAI/bge-small-en-v1.5" in out.stderr
    assert not (tmp_path / ".cursor").exists()
    out = _ctl("service", "install", "--dry-run", "--model", "nope/nothing", cwd=tmp_path,
               env=env)
    assert out.returncode == 1 and "not a model memnestd can load" in out.stderr
    fine = _ctl("config", "cursor", "--model", "BAAI/bge-base-en-v1.5", cwd=tmp_path, env=env)
    assert fine.returncode == 0, fine.stderr


def test_reference_names_memnest_does_not_offer_point_to_the_replacement(call, workspace,
                                                                          fresh_daemon):
    with pytest.raises(ToolFailure) as retired:
        call("memory_traverse", start_id=1)
    assert retired.value.code == "unknown_tool"
    assert "memory_query" in retired.value.message and "read_only" in retired.value.message
    # The example the message gives runs as written.
    first = call("memory_store", content="Retries live in the HTTP client")["id"]
    second = call("memory_store", content="The HTTP client backs off exponentially")["id"]
    call("memory_relate", from_id=first, to_id=second)
    example = retired.value.message.split("e.g. ")[1].split(";")[0].replace(
        "{id: 7}", f"{{id: {first}}}")
    rows = call("memory_query", cypher_query=example, read_only=True)["rows"]
    assert any(second in row.values() if isinstance(row, dict) else second in row
               for row in rows), rows

    with pytest.raises(ToolFailure) as fusion:
        call("memory_search", query="retries", fusion="normalized")
    assert "'context', the default, replaced it" in fusion.value.message

    fresh_daemon.env["MEMORY_FUSION"] = "normalized"
    proc = fresh_daemon.start(wait=False)
    assert proc.wait(timeout=120) != 0
    assert "'context', the default, replaced it" in proc.stderr.read()
