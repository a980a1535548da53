"""memory_verify and `memnest-ctl verify` through a real daemon: a workspace written by tools
reports healthy (store/verify.py's checks themselves: tests/daemon/store/test_verify.py)."""
import os
import subprocess
import sys


def test_verify_through_the_daemon_and_the_cli(daemon, call, workspace):
    first = call("memory_store", content="The build cache lives in /var/cache/build",
                 tags=["build"])
    second = call("memory_store", content="Releases are cut from the main branch",
                  tags=["release", "git"])
    call("memory_update", id=first["id"], importance=1)
    call("memory_update", id=first["id"], importance=2, tags=["build", "cache"])
    call("memory_relate", from_id=first["id"], to_id=second["id"])
    report = call("memory_verify")
    assert report["healthy"], report["findings"]
    ctl = os.path.join(os.path.dirname(sys.executable), "memnest-ctl")
    done = subprocess.run([ctl, "verify", "--workspace", str(workspace)], env=daemon.env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "healthy" in done.stdout and "2 memories" in done.stdout
