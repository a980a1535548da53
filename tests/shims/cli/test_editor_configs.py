"""`memnest-ctl config --check` (editor_configs.check), without a daemon: one finding per
thing that can be wrong in an editor's entry, in a fixed order, each failure with its fix."""
import json
from pathlib import Path

import pytest

from memnest_shims.cli import editor_configs
from memnest_shims.cli.editor_configs import check, mcp_command

from support import OFFLINE_MODEL


@pytest.fixture(autouse=True)
def no_daemon(tmp_path, monkeypatch):
    """No memnestd to ask which model it runs: the entry is compared with the setting."""
    monkeypatch.setenv("MEMNEST_SOCKET", str(tmp_path / "nobody.sock"))
    monkeypatch.delenv("MEMORY_EMBEDDING_MODEL", raising=False)


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _write(path: Path, document: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def _entry(project: Path, **changes: object) -> dict:
    entry = {"command": str(mcp_command()), "args": [],
             "env": {"MEMORY_WORKSPACE": str(project)}}
    return {**entry, **changes}


def _findings(results) -> list[tuple[bool, str]]:
    return [(r.ok, r.name) for r in results]


def test_a_missing_file_is_one_finding_with_the_fix(project):
    [missing] = check("cursor", project)
    assert not missing.ok and missing.name == "config file"
    assert missing.fix == f"run `memnest-ctl config cursor` in {project}"


def test_a_broken_file_says_where(project):
    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text('{"mcpServers": ')
    [broken] = check("cursor", project)
    assert not broken.ok and "is not valid JSON (line 1" in broken.detail
    assert broken.fix.startswith("fix the file, then run")


def test_a_file_without_the_entry(project):
    _write(project / ".cursor" / "mcp.json", {"mcpServers": {"other": {}}})
    assert _findings(check("cursor", project)) == [(True, "config file"), (False, "entry")]


def test_a_good_entry_passes_every_check(project):
    _write(project / ".cursor" / "mcp.json",
           {"mcpServers": {"memnest": _entry(project), "other": {}}})
    results = check("cursor", project)
    assert all(r.ok for r in results), results
    assert [r.name for r in results] == ["config file", "entry", "command", "workspace",
                                         "model"]
    assert results[1].detail == '"memnest" present, beside other'


def test_every_wrong_part_of_an_entry_is_found(project, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    entry = _entry(project, type="sse", command="memnest-mcp",
                   env={"MEMORY_WORKSPACE": str(elsewhere)})
    _write(project / ".vscode" / "mcp.json",
           {"servers": {"memnest": entry}, "mcpServers": {"memnest": entry}})
    results = {r.name: r for r in check("vscode", project)}
    assert [name for name, r in results.items() if not r.ok] == [
        "type", "servers key", "command", "workspace"]
    assert "is not an absolute path" in results["command"].detail
    assert results["workspace"].detail == f"pinned to {elsewhere}, not {project}"
    assert results["model"].ok


def test_a_shared_file_must_not_pin_a_project(project, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    _write(tmp_path / ".gemini" / "settings.json", {"mcpServers": {"memnest": _entry(project)}})
    workspace = {r.name: r for r in check("gemini", project)}["workspace"]
    assert not workspace.ok and "serves every project of Gemini CLI" in workspace.detail


def test_a_model_differing_from_the_setting_is_a_failure(project, monkeypatch):
    monkeypatch.setenv("MEMORY_EMBEDDING_MODEL", OFFLINE_MODEL)
    _write(project / ".cursor" / "mcp.json", {"mcpServers": {"memnest": _entry(project)}})
    model = {r.name: r for r in check("cursor", project)}["model"]
    assert not model.ok and "would refuse the existing databases" in model.detail


def test_a_model_named_in_the_entry_with_nothing_to_compare_with_passes(project):
    entry = _entry(project, env={"MEMORY_WORKSPACE": str(project),
                                 "MEMORY_EMBEDDING_MODEL": OFFLINE_MODEL})
    _write(project / ".cursor" / "mcp.json", {"mcpServers": {"memnest": entry}})
    model = {r.name: r for r in check("cursor", project)}["model"]
    assert model.ok and "no running memnestd to compare with" in model.detail


def test_the_clients_all_have_a_file():
    assert all(isinstance(spec.path(Path("/p")), Path)
               for spec in editor_configs.CLIENTS.values())
