"""A full disk or a read-only database folder: the caller gets a clear, structured error
(code storage_error), nothing half-written is acknowledged, and the database is usable
again as soon as space or write access returns, also after a restart. Runs on a small tmpfs
mounted over the workspace, which needs root and a kernel that allows the mount."""
import os
import subprocess

import pytest

from memnest_shims.client import ToolFailure


@pytest.fixture
def small_disk(tmp_path):
    ws = tmp_path / "small"
    ws.mkdir()
    if os.getuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (root also ignores folder permissions,"
                    " so chmod cannot make a read-only folder either)")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0755", "tmpfs",
                           str(ws)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"this machine does not allow a tmpfs mount: {done.stderr.strip()}")
    yield ws.resolve()
    subprocess.run(["umount", "-l", str(ws)], capture_output=True)


def _expect_storage_error(client, ws, content):
    with pytest.raises(ToolFailure) as failed:
        client.call_tool("memory_store", {"content": content}, str(ws))
    assert failed.value.code == "storage_error", failed.value
    return failed.value.message


def test_disk_full_then_read_only_then_recovered(fresh_daemon, small_disk):
    ws = small_disk
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        kept = client.call_tool("memory_store", {"content": "stored before the disk filled"},
                                str(ws))["id"]
        subprocess.run(["dd", "if=/dev/zero", f"of={ws / 'filler'}", "bs=64k"],
                       capture_output=True)
        # Long enough to need new pages: a short row may still fit in pages the write-ahead
        # log and the journal of deferred rows already hold, and is then simply stored.
        message = _expect_storage_error(client, ws, "written while the disk is full. " * 100)
        assert "nothing was written" in message and "disk is full" in message
        # Reads keep working while the disk is full.
        assert client.call_tool("memory_get", {"id": kept}, str(ws))["content"] == \
            "stored before the disk filled"
        os.unlink(ws / "filler")
        after = client.call_tool("memory_store", {"content": "stored once space returned"},
                                 str(ws))
        assert after["status"] == "stored"
    finally:
        client.close()

    fresh_daemon.stop()
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        listed = client.call_tool("memory_list", {"limit": 50}, str(ws))
        assert listed["total"] == 2
        health = client.call_tool("memory_stats", {}, str(ws))["index_health"]
        assert health["healthy"] and health["rows_in_database"] == 2
    finally:
        client.close()

    # Read-only: the daemon holds the files open while it runs (a remount is refused as
    # busy), so the folder turns read-only between two daemons.
    fresh_daemon.stop()
    subprocess.run(["mount", "-o", "remount,ro", str(ws)], check=True)
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        try:
            message = _expect_storage_error(client, ws, "written on a read-only folder")
            assert "read-only" in message.lower()
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(ws)], check=True)
        assert client.call_tool("memory_store", {"content": "stored once writable again"},
                                str(ws))["status"] == "stored"
        assert client.call_tool("memory_list", {"limit": 50}, str(ws))["total"] == 3
    finally:
        client.close()
    assert not list((ws / ".memnest").glob("*.unreplayable-*"))
