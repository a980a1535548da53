"""memnest-ctl dream and reindex: progress streamed from the daemon, plain lines off a TTY."""
import json
import subprocess
import sys
from pathlib import Path

CTL = str(Path(sys.executable).parent / "memnest-ctl")


def ctl(daemon, *args, cwd):
    return subprocess.run([CTL, *args], env=daemon.env, cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_dream_streams_progress_and_reports(daemon, workspace, call):
    call("memory_store", items=[{"content": f"ctl dream note {n} on port {9000 + n}"}
                                for n in range(5)])
    skipped = ctl(daemon, "dream", cwd=workspace)
    assert skipped.returncode == 0 and "skipped" in skipped.stdout and "--force" in skipped.stdout
    run = ctl(daemon, "dream", "--force", "--dry-run", cwd=workspace)
    assert run.returncode == 0, run.stderr
    assert "would merge 0" in run.stdout and "scanned 5 of 5" in run.stdout
    # Not a TTY: progress comes as plain lines, one per step, on stderr.
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("dream ")]
    assert lines and lines[0].endswith("planning") and "\r" not in run.stderr
    report = json.loads(ctl(daemon, "dream", "--force", "--json", cwd=workspace).stdout)
    assert report["status"] == "done" and report["scan_coverage"]["corpus"] == 5


def test_reindex_all_open_workspaces(daemon, workspace, call):
    call("memory_store", content="reindexed by the CLI")
    out = ctl(daemon, "reindex", "--all", "--json", cwd=workspace)
    assert out.returncode == 0, out.stderr
    mine = next(r for r in json.loads(out.stdout) if r["workspace"] == str(workspace))
    assert mine["memories"] == 1 and mine["vector_indexed"] >= 1
    human = ctl(daemon, "reindex", cwd=workspace)
    assert f"{workspace}: 1 memories" in human.stdout


def test_progress_bar_on_a_terminal(daemon, workspace, call):
    import os
    import pty

    call("memory_store", content="drawn on a terminal")
    leader, follower = pty.openpty()
    proc = subprocess.Popen([CTL, "dream", "--force", "--dry-run"], env=daemon.env,
                            cwd=workspace, stdout=subprocess.PIPE, stderr=follower, text=True)
    out, _ = proc.communicate(timeout=120)
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    assert proc.returncode == 0
    assert b"\r" in drawn and b"[####" in drawn and b"5/5 planned" in drawn
