"""Nobody else gets in: a connection from another uid is refused (SO_PEERCRED) and logged,
and the daemon keeps serving its owner. Also what the peer check costs per call."""
import os
import pwd
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from support import Daemon

# Imports grpc while still root (the venv lives where `nobody` cannot read), then drops to
# `nobody` before connecting, so the kernel records nobody's uid for the connection.
CLIENT = textwrap.dedent("""
    import os, sys, grpc
    from memnest_proto import memnest_pb2 as pb, memnest_pb2_grpc as pb_grpc
    from memnest_proto.paths import grpc_target
    os.setgroups([]); os.setgid(int(sys.argv[3])); os.setuid(int(sys.argv[2]))
    assert os.getuid() == int(sys.argv[2])
    channel = grpc.insecure_channel(grpc_target(sys.argv[1]))
    try:
        status = pb_grpc.MemnestStub(channel).Status(pb.StatusRequest(), timeout=5)
        print("SERVED", status.pid)
    except grpc.RpcError as exc:
        print("REFUSED", exc.code().name)
""")


@pytest.fixture
def shared_daemon():
    """A daemon whose folder other users may enter for the test (opened after it started:
    the daemon refuses a loose folder at start)."""
    root = Path(tempfile.mkdtemp(prefix="memnest-peer-"))
    d = Daemon(root)
    d.start()
    yield d
    d.stop()
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to run a client as another uid")
def test_connection_from_another_uid_is_refused_and_logged(shared_daemon, workspace):
    nobody = pwd.getpwnam("nobody")
    os.chmod(shared_daemon.root, 0o711)
    os.chmod(shared_daemon.socket, 0o666)
    try:
        out = subprocess.run([sys.executable, "-c", CLIENT, str(shared_daemon.socket),
                              str(nobody.pw_uid), str(nobody.pw_gid)],
                             capture_output=True, text=True, timeout=60,
                             cwd=str(Path(__file__).resolve().parents[2]))
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("REFUSED UNAVAILABLE"), out.stdout
        # The same client as root (the daemon's own uid) is served: the refusal is the uid.
        own = subprocess.run([sys.executable, "-c", CLIENT, str(shared_daemon.socket),
                              "0", "0"], capture_output=True, text=True, timeout=60,
                             cwd=str(Path(__file__).resolve().parents[2]))
        assert own.stdout.startswith("SERVED"), own.stdout + own.stderr
    finally:
        os.chmod(shared_daemon.socket, 0o600)
        os.chmod(shared_daemon.root, 0o700)
    log = shared_daemon.log.read_text()
    assert f"refused a connection from uid {nobody.pw_uid}" in log
    client = shared_daemon.client(autostart=False)
    try:
        stored = client.call_tool("memory_store", {"content": "still serving its owner"},
                                  str(workspace))
        assert stored
        assert len(shared_daemon.pids()) == 1
    finally:
        client.close()


def _median_status_ms(target: str) -> tuple[float, float]:
    import grpc
    from memnest_proto import memnest_pb2 as pb, memnest_pb2_grpc as pb_grpc
    connects, calls = [], []
    for _ in range(20):
        t0 = time.perf_counter()
        channel = grpc.insecure_channel(target)
        stub = pb_grpc.MemnestStub(channel)
        stub.Status(pb.StatusRequest(), timeout=10)
        connects.append(time.perf_counter() - t0)
        for _ in range(10):
            t1 = time.perf_counter()
            stub.Status(pb.StatusRequest(), timeout=10)
            calls.append(time.perf_counter() - t1)
        channel.close()
    return statistics.median(connects) * 1e3, statistics.median(calls) * 1e3


def test_peer_check_latency(daemon):
    """The check runs once per connection; a call on an open connection pays only the relay
    hop. Compared with the daemon's private gRPC socket (no check, no relay)."""
    from memnest_proto.paths import grpc_target
    inner = next(daemon.root.glob(".memnestd-*.grpc"))
    public = _median_status_ms(grpc_target(daemon.socket))
    direct = _median_status_ms(grpc_target(inner))
    print(f"\nStatus through the checked socket: connect+call {public[0]:.2f} ms, call "
          f"{public[1]:.2f} ms; direct to gRPC: connect+call {direct[0]:.2f} ms, call "
          f"{direct[1]:.2f} ms")
    assert public[1] < direct[1] + 5.0
