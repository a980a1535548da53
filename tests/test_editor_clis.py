"""The real Gemini and Codex CLIs (from npm, `make editors`) read what `memnest-ctl config`
wrote: Gemini starts memnest-mcp and connects to it; Codex lists the entry, enabled, with
the environment memnest gave it. Issue 37."""
import json
import os
import subprocess
from pathlib import Path

import pytest
from support import BIN

TOOLS = Path(__file__).resolve().parent.parent / ".tools" / "editors" / "node_modules" / ".bin"
CTL = BIN / "memnest-ctl"


def cli(name: str) -> Path:
    path = TOOLS / name
    if not path.exists():
        if os.environ.get("MEMNEST_EDITOR_CLIS") == "1":
            pytest.fail(f"{path} is missing: `make editors` installs it")
        pytest.skip(f"{name} CLI not installed (make editors)")
    return path


@pytest.fixture
def user(tmp_path, daemon) -> tuple[dict, Path]:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    env = {**daemon.env, "HOME": str(home), "PATH": f"{BIN}:{os.environ.get('PATH', '')}",
           "NO_COLOR": "1", "GEMINI_API_KEY": "unused", "OPENAI_API_KEY": "unused"}
    env.pop("MEMORY_WORKSPACE", None)
    return env, project


def configure(editor: str, env: dict, project: Path) -> None:
    out = subprocess.run([str(CTL), "config", editor], env=env, cwd=project,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


def test_gemini_connects_to_memnest(user):
    gemini = cli("gemini")
    env, project = user
    configure("gemini", env, project)
    home = Path(env["HOME"])
    # an untrusted folder starts no MCP server: the user trusts it once
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps(
        {str(project): "TRUST_FOLDER"}))
    out = subprocess.run([str(gemini), "mcp", "list"], env=env, cwd=project,
                         capture_output=True, text=True, timeout=120)
    listed = out.stdout + out.stderr  # (Gemini prints the list on stderr)
    assert "memnest" in listed and "- Connected" in listed, listed
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    assert {"SessionStart", "BeforeAgent", "AfterAgent"} <= set(settings["hooks"])


def test_codex_lists_memnest(user):
    codex = cli("codex")
    env, project = user
    configure("codex", env, project)
    out = subprocess.run([str(codex), "mcp", "list", "--json"], env=env, cwd=project,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    servers = {s["name"]: s for s in json.loads(out.stdout)}
    entry = servers["memnest"]
    assert entry["enabled"] is True
    transport = entry.get("transport", entry)
    assert transport["command"] == str(BIN / "memnest-mcp")
    assert "MEMORY_WORKSPACE" not in (transport.get("env") or {})  # global: no pin
