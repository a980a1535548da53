"""Nobody else gets in: a connection from another uid is refused (SO_PEERCRED) and logged,
and the daemon keeps serving its owner. Also that the check runs once per connection."""
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import textwrap
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


def test_the_peer_check_runs_once_per_connection(tmp_path, monkeypatch):
    """The check runs once per connection; a call on an open connection pays only the relay
    hop. Counted, not timed: the daemon's relay (listener._Relay) in this process, between a
    public socket and an echoing stand-in for the gRPC server, its peer checks counted."""
    import socket
    import threading
    from memnest_daemon.server import listener

    checks = []
    check = listener._Relay._peer_allowed
    monkeypatch.setattr(listener._Relay, "_peer_allowed",
                        staticmethod(lambda conn: checks.append(conn.fileno()) or check(conn)))
    inner, public = tmp_path / "inner.sock", tmp_path / "public.sock"
    backend_connections = []

    def echo(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def serve(server: socket.socket) -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            backend_connections.append(conn)
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(inner))
    server.listen(64)
    threading.Thread(target=serve, args=(server,), daemon=True).start()
    outside = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    outside.bind(str(public))
    outside.listen(64)
    relay = listener._Relay(outside, inner)
    relay.start()
    try:
        for n in range(20):  # 20 connections, 10 exchanges on each
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(30)
                conn.connect(str(public))
                for i in range(10):
                    message = f"call {i} on connection {n}".encode()
                    conn.sendall(message)
                    got = b""
                    while len(got) < len(message):
                        got += conn.recv(65536)
                    assert got == message
        assert len(checks) == 20
        assert len(backend_connections) == 20  # one relayed connection each, kept open
    finally:
        relay.stop_accepting()
        server.close()
