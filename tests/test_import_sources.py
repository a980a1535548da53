"""Another tool's memory files taken in through the real shim and the real CLI, over a real
daemon: a dry run writes nothing, the facts are found by memory_search with their file and
lines, editing the source marks the memory changed and importing again updates that one
memory, and what the database kept holds after a restart. Hostile files and paths are
refused with a clear message while the rest still comes in."""
import json
import os
import subprocess
from pathlib import Path

import anyio
import pytest

from support import BIN, error_text, result_json

CLAUDE_MD = """# Orders service

## Commands
- Build with `make build`; the service needs Go 1.22
- Test one package with `go test ./internal/billing/...`

## Conventions
- Wrap errors with `fmt.Errorf("...: %w", err)`; never panic in handlers
"""
ACTIVE_CONTEXT = """# Active Context
## Current focus
Replacing the CSV exporter with a streaming writer that keeps memory flat.
## Next steps
- Benchmark the streaming writer with the 2 GB customer file
"""


@pytest.fixture
def setup(fresh_daemon, workspace, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    fresh_daemon.env["HOME"] = str(home)  # the person's own ~/.claude: this test's
    fresh_daemon.env.pop("CLAUDE_CONFIG_DIR", None)
    fresh_daemon.start()
    (workspace / "CLAUDE.md").write_text(CLAUDE_MD)
    (workspace / "memory-bank").mkdir()
    (workspace / "memory-bank" / "activeContext.md").write_text(ACTIVE_CONTEXT)
    return fresh_daemon, workspace, home


def calls(daemon, workspace: Path, *asked: tuple[str, dict]) -> list:
    """Each (tool, arguments) through the real memnest-mcp; a tool error as its text."""
    async def run():
        out = []
        async with daemon.mcp(workspace, MEMORY_WORKSPACE=str(workspace)) as session:
            for tool, arguments in asked:
                result = await session.call_tool(tool, arguments)
                out.append(error_text(result) if result.is_error else result_json(result))
        return out
    return anyio.run(run)


def ctl(daemon, workspace: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "memnest-ctl"), *args], cwd=workspace, env={
        **daemon.env, "MEMORY_WORKSPACE": str(workspace)}, capture_output=True, text=True,
        timeout=300)


def test_claude_md_comes_in_is_found_and_follows_its_edits(setup):
    daemon, workspace, home = setup
    dry, listed = calls(daemon, workspace,
                        ("memory_import", {"from": "claude-code", "dry_run": True}),
                        ("memory_list", {}))
    assert dry["dry_run"] and dry["store"] == 3 and dry["files"] == ["CLAUDE.md"]
    assert {row["action"] for row in dry["planned"]} == {"store"}
    assert listed["total"] == 0

    done, found = calls(daemon, workspace, ("memory_import", {"from": "claude-code"}),
                        ("memory_search", {"query": "which Go version does the build need"}))
    assert done["store"] == 3
    hit = found["results"][0]
    assert "Go 1.22" in hit["content"]
    got, = calls(daemon, workspace, ("memory_get", {"id": hit["id"]}))
    assert got["origin"] == {"via": "import", "client": "claude-code",
                             "session": "CLAUDE.md:4"}

    (workspace / "CLAUDE.md").write_text(CLAUDE_MD.replace("Go 1.22", "Go 1.23"))
    stale, again, now = calls(daemon, workspace, ("memory_list", {"stale": True}),
                              ("memory_import", {"from": "claude-code"}),
                              ("memory_get", {"id": hit["id"]}))
    assert [m["id"] for m in stale["memories"]] == [hit["id"]]  # the edit marked it changed
    assert again["update"] == 1 and again["store"] == 0 and again["unchanged"] == 2
    assert "Go 1.23" in now["content"]

    daemon.stop()
    daemon.start()
    listed, third, fresh = calls(daemon, workspace, ("memory_list", {}),
                                 ("memory_import", {"from": "claude-code"}),
                                 ("memory_list", {"stale": True}))
    assert listed["total"] == 3 and third["unchanged"] == 3 and third["changes"] == []
    assert fresh["memories"] == []


def test_the_cli_imports_a_memory_bank_and_says_what_it_did(setup):
    daemon, workspace, home = setup
    dry = ctl(daemon, workspace, "import", "--from", "cline", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would be stored" in dry.stdout and "activeContext.md" in dry.stdout
    done = ctl(daemon, workspace, "import", "--from", "cline", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["store"] == 2
    (workspace / "memory-bank" / "activeContext.md").write_text(
        ACTIVE_CONTEXT.replace("- Benchmark the streaming writer with the 2 GB customer file\n",
                               ""))
    kept = ctl(daemon, workspace, "import", "--from", "cline")
    assert "gone from its file" in kept.stdout and "--prune" in kept.stdout
    pruned = ctl(daemon, workspace, "import", "--from", "cline", "--prune", "--json")
    assert len(json.loads(pruned.stdout)["pruned"]) == 1
    listed, = calls(daemon, workspace, ("memory_list", {"via": "import"}))
    assert [m["content"][:40] for m in listed["memories"]] == [
        "Current focus: Replacing the CSV exporte"]
    follow = ctl(daemon, workspace, "import", "--from", "cline", "--follow")
    assert follow.returncode == 0 and "followed" in follow.stdout, follow.stderr
    stop = ctl(daemon, workspace, "import", "--from", "cline", "--unfollow")
    assert "no longer follows cline" in stop.stdout, stop.stderr


def test_hostile_files_are_left_out_with_why_and_the_rest_comes_in(setup):
    daemon, workspace, home = setup
    notes = workspace / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("- The staging cluster is rebuilt every Monday morning\n")
    (notes / "latin1.md").write_bytes("caf\xe9 is open from nine".encode("latin-1"))
    with open(notes / "huge.md", "wb") as f:
        f.truncate(50 << 20)  # a 50 MB file
    (home / "secret.md").write_text("- my bank PIN is 2468\n")
    os.symlink(home / "secret.md", notes / "link.md")
    done, = calls(daemon, workspace, ("memory_import", {"from": "markdown", "path": "notes"}))
    assert done["store"] == 1
    skipped = done["skipped"]
    assert "not UTF-8" in skipped["notes/latin1.md"]
    assert "over the limit" in skipped["notes/huge.md"]
    assert "symbolic link" in skipped["notes/link.md"]
    listed, = calls(daemon, workspace, ("memory_list", {}))
    assert [m["content"] for m in listed["memories"]] == [
        "The staging cluster is rebuilt every Monday morning"]

    refused = calls(daemon, workspace,
                    ("memory_import", {"from": "evernote"}),
                    ("memory_import", {"from": "markdown", "path": "../../etc"}),
                    ("memory_import", {"from": "markdown"}),
                    ("memory_import", {"dry_run": True}),
                    ("memory_import", {"from": "kiro"}))
    assert "from" in refused[0] and "claude-code" in refused[0]
    assert "leaves the workspace" in refused[1]
    assert "needs a path" in refused[2]
    assert "path" in refused[3]
    assert "no kiro files found" in refused[4] and ".kiro/steering" in refused[4]
    after, = calls(daemon, workspace, ("memory_list", {}))
    assert after["total"] == 1 and daemon.proc.poll() is None


def test_the_cli_and_the_daemon_know_the_same_kinds():
    from memnest_daemon.sources.kinds import KINDS
    from memnest_shims.cli.commands.transfer import SOURCE_KINDS
    assert list(SOURCE_KINDS) == list(KINDS)


def test_export_as_markdown_and_back_into_an_empty_workspace(setup, tmp_path):
    daemon, workspace, home = setup
    client = daemon.client()
    stored = client.call_tool("memory_store", {"items": [
        {"content": "We deploy with blue-green switches, never on Fridays",
         "category": "decision", "tags": ["deploy"], "importance": 5},
        {"content": "The staging database is rebuilt every Monday", "tags": ["db", "staging"]},
    ]}, str(workspace))["results"]
    first, second = (r["id"] for r in stored)
    client.call_tool("memory_relate", {"from_id": first, "to_id": second,
                                       "relationship": "EXPLAINS"}, str(workspace))
    vault = tmp_path / "vault"
    out = ctl(daemon, workspace, "export", "--format", "markdown", str(vault))
    assert out.returncode == 0, out.stderr
    assert "wrote 2 notes with 1 links" in out.stdout
    note = next(vault.glob(f"{first}-*.md")).read_text()
    assert note.startswith("---\nmemnest: 1\n") and "category: decision" in note
    assert f"- explains [[{second}-" in note
    again = ctl(daemon, workspace, "export", "--format", "markdown", str(vault))
    assert again.returncode != 0 and "not an empty folder" in again.stderr  # left alone

    other = tmp_path / "other"
    other.mkdir()
    done = ctl(daemon, other, "import", "--from", "markdown", str(vault), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["links"]["created"] == 1
    listed, = calls(daemon, other, ("memory_list", {}))
    got = {m["content"]: m for m in listed["memories"]}
    deploy = got["We deploy with blue-green switches, never on Fridays"]
    assert deploy["category"] == "decision" and deploy["importance"] == 5
    assert deploy["tags"] == ["deploy"]
    shown, = calls(daemon, other, ("memory_get", {"id": deploy["id"]}))
    assert [(e["type"], e["to_id"]) for e in shown["edges"]] == [
        ("EXPLAINS", got["The staging database is rebuilt every Monday"]["id"])]
    client.close()


def test_a_digest_for_editors_without_mcp_and_what_it_will_not_overwrite(setup):
    daemon, workspace, home = setup
    client = daemon.client()
    shared = client.call_tool("memory_store", {"content": "Releases are cut every second "
                                                          "Thursday", "importance": 5},
                              str(workspace))["id"]
    client.call_tool("memory_share", {"id": shared}, str(workspace))
    client.call_tool("memory_store", {"content": "My own alias: gs is git status"},
                     str(workspace))
    (workspace / "AGENTS.md").write_text("# Hand-written instructions\n")
    refused = ctl(daemon, workspace, "export", "--format", "agents-md", "AGENTS.md")
    assert refused.returncode != 0 and "not written by memnest" in refused.stderr
    assert (workspace / "AGENTS.md").read_text() == "# Hand-written instructions\n"
    out = ctl(daemon, workspace, "export", "--format", "agents-md", "docs/AGENTS.md")
    assert out.returncode != 0 and "does not exist; make it first" in out.stderr  # none made
    assert "Traceback" not in out.stderr
    (workspace / "docs").mkdir()
    out = ctl(daemon, workspace, "export", "--format", "agents-md", "docs/AGENTS.md")
    assert out.returncode == 0, out.stderr
    text = (workspace / "docs" / "AGENTS.md").read_text()
    assert "Releases are cut" in text and "alias" not in text  # private stays private
    again = ctl(daemon, workspace, "export", "--format", "claude-md", "--scope", "all",
                "docs/AGENTS.md")
    assert again.returncode == 0, again.stderr  # memnest's own digest may be replaced
    assert "alias: gs" in (workspace / "docs" / "AGENTS.md").read_text()
    client.close()


def test_a_followed_source_is_kept_in_step_across_a_restart(setup):
    import time
    daemon, workspace, home = setup
    bank = workspace / "memory-bank" / "activeContext.md"
    first, = calls(daemon, workspace, ("memory_import", {"from": "cline", "follow": True}))
    assert first["store"] == 2 and first["followed"] == [{"from": "cline", "path": None}]
    bank.write_text(ACTIVE_CONTEXT.replace("2 GB", "5 GB"))
    time.sleep(2.2)  # a workspace's followed sources are looked at every 2 s at most
    found, = calls(daemon, workspace, ("memory_search", {"query": "benchmark customer file"}))
    assert "5 GB" in found["results"][0]["content"]

    daemon.stop()
    bank.write_text(ACTIVE_CONTEXT.replace("2 GB", "9 GB"))  # while the daemon was down
    daemon.start()
    found, listed = calls(daemon, workspace,
                          ("memory_search", {"query": "benchmark customer file"}),
                          ("memory_list", {"via": "import"}))
    assert listed["total"] == 2, listed
    assert any("9 GB" in m["content"] for m in listed["memories"]), listed

    stopped, = calls(daemon, workspace, ("memory_import", {"from": "cline", "follow": False}))
    assert stopped["followed"] == []
    bank.write_text(ACTIVE_CONTEXT.replace("2 GB", "7 GB"))
    time.sleep(2.2)
    listed, = calls(daemon, workspace, ("memory_list", {"via": "import"}))
    texts = " ".join(m["content"] for m in listed["memories"])
    assert "9 GB" in texts and "7 GB" not in texts  # no longer followed
