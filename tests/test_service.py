"""memnestd under a service manager: socket activation exactly as systemd does it, and the idle
exit of on-demand daemons."""
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memnest_shims.client import DaemonClient

from conftest import BIN

# Runs in the child between fork and exec, as systemd does: the listening socket becomes fd 3,
# LISTEN_PID is the pid that memnestd will have (exec keeps it), LISTEN_FDS counts from fd 3.
ACTIVATE = """
import os, sys
fd = int(sys.argv[1])
if fd != 3:
    os.dup2(fd, 3)
    os.close(fd)
os.set_inheritable(3, True)
os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS="1", LISTEN_FDNAMES="memnestd.socket")
os.execv(sys.argv[2], sys.argv[2:])
"""


class SocketUnit:
    """What a systemd socket unit holds: a listening Unix socket at the path, mode 0600."""

    def __init__(self, path: Path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            self.sock.bind(str(path))
        finally:
            os.umask(old)
        self.sock.listen(128)
        self.inode = path.stat().st_ino

    def activate(self, env: dict, *args: str) -> subprocess.Popen:
        fd = self.sock.fileno()
        return subprocess.Popen([sys.executable, "-c", ACTIVATE, str(fd), str(BIN / "memnestd"),
                                 *args], env=env, pass_fds=(fd,),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def unit(fresh_daemon):
    u = SocketUnit(fresh_daemon.socket)
    yield u
    u.close()


def wait_answer(client: DaemonClient, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return client.status(timeout=5)
        except Exception:  # noqa: BLE001 - not answering yet
            client.close()
            time.sleep(0.1)
    raise TimeoutError("no answer")


# -- socket activation ---------------------------------------------------------------------------

def test_socket_activation_serves_the_inherited_socket(fresh_daemon, unit, workspace):
    proc = unit.activate(fresh_daemon.env, "--service")
    fresh_daemon.proc = proc
    client = fresh_daemon.client(autostart=False)
    status = wait_answer(client)
    assert status.pid == proc.pid  # the exec'd memnestd, whose pid LISTEN_PID named
    stored = client.call_tool("memory_store", {"content": "stored through an activated socket"},
                              str(workspace))
    assert stored["status"] == "stored"
    # The daemon served the socket it inherited: the same file, never unlinked or rebound.
    assert fresh_daemon.socket.stat().st_ino == unit.inode
    assert stat.S_IMODE(fresh_daemon.socket.stat().st_mode) == 0o600
    assert "(inherited)" in fresh_daemon.log.read_text()
    # Its private gRPC socket sits in the same 0700 folder; nothing else listens there.
    inner = list(fresh_daemon.root.glob(".memnestd-*.grpc"))
    assert len(inner) == 1 and stat.S_IMODE(inner[0].stat().st_mode) == 0o600

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    # The socket belongs to the service manager: still there, still the same, still listening.
    assert fresh_daemon.socket.stat().st_ino == unit.inode
    assert not list(fresh_daemon.root.glob(".memnestd-*.grpc"))

    # A client connecting while no daemon runs is queued, as systemd would hold it; the next
    # activation serves it, with the memory written before.
    waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    waiting.connect(str(fresh_daemon.socket))
    waiting.close()
    proc = unit.activate(fresh_daemon.env, "--service")
    fresh_daemon.proc = proc
    client = fresh_daemon.client(autostart=False)
    assert wait_answer(client).pid == proc.pid
    found = client.call_tool("memory_search", {"query": "activated socket"}, str(workspace))
    assert found["results"][0]["id"] == stored["id"]

    # `memnest-ctl stop` stops it although the socket (the manager's) stays.
    client.close()
    stop = subprocess.run([str(BIN / "memnest-ctl"), "stop"], env=fresh_daemon.env,
                          capture_output=True, text=True, timeout=60)
    assert stop.returncode == 0 and f"(pid {proc.pid}) stopped" in stop.stdout, stop.stderr
    assert proc.wait(timeout=10) == 0
    assert fresh_daemon.socket.stat().st_ino == unit.inode


def test_clients_wait_for_an_activated_daemon_instead_of_starting_their_own(fresh_daemon, unit,
                                                                           workspace):
    """With a socket unit listening but its daemon not started, a shim must not start a
    second daemon: it connects, and its connection is what activates the service."""
    client = fresh_daemon.client(autostart=True)
    result = {}

    import threading

    def call():
        result["stats"] = client.call_tool("memory_stats", {}, str(workspace))

    caller = threading.Thread(target=call)
    caller.start()
    time.sleep(1.5)  # the client is waiting on the queued socket
    assert fresh_daemon.pids() == [], "the client started its own daemon"
    proc = unit.activate(fresh_daemon.env, "--service")  # what systemd does on that connection
    fresh_daemon.proc = proc
    caller.join(timeout=90)
    assert result["stats"]["memories"] == 0
    assert fresh_daemon.pids() == [proc.pid]


def test_listen_fds_for_another_pid_are_ignored(fresh_daemon):
    env = {**fresh_daemon.env, "LISTEN_PID": "1", "LISTEN_FDS": "1"}
    fresh_daemon.proc = subprocess.Popen([str(BIN / "memnestd")], env=env,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         text=True)
    fresh_daemon.wait_ready()
    assert "(inherited)" not in fresh_daemon.log.read_text()


def test_an_inherited_fd_that_is_not_a_listening_socket_is_refused(fresh_daemon, tmp_path):
    not_a_socket = open(tmp_path / "file", "w")
    env = dict(fresh_daemon.env)
    proc = subprocess.run([sys.executable, "-c", ACTIVATE, str(not_a_socket.fileno()),
                           str(BIN / "memnestd")], env=env, pass_fds=(not_a_socket.fileno(),),
                          capture_output=True, text=True, timeout=60)
    not_a_socket.close()
    assert proc.returncode != 0
    assert "not a Unix stream socket" in proc.stderr and "Traceback" not in proc.stderr


# -- idle exit -------------------------------------------------------------------------------------

def test_on_demand_daemon_exits_when_idle_and_comes_back(fresh_daemon, workspace, monkeypatch):
    monkeypatch.setenv("MEMNEST_IDLE_EXIT_MINUTES", "0.03")  # 1.8 s
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE", "MEMORY_EMBEDDING_MODEL"):
        monkeypatch.setenv(name, fresh_daemon.env[name])
    client = DaemonClient(fresh_daemon.socket, client_name="tests")  # starts it --spawned
    client.call_tool("memory_store", {"content": "kept across an idle exit"}, str(workspace))
    pid = client.status().pid
    # A connected client keeps it alive even without calls.
    time.sleep(4)
    assert fresh_daemon.pids() == [pid]
    client.close()
    deadline = time.monotonic() + 20
    while fresh_daemon.pids() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert fresh_daemon.pids() == [], "the idle on-demand daemon did not exit"
    assert not fresh_daemon.socket.exists()
    assert "no clients and no calls" in fresh_daemon.log.read_text()
    # The next call starts it again, transparently.
    found = client.call_tool("memory_search", {"query": "idle exit"}, str(workspace))
    assert found["results"][0]["content"] == "kept across an idle exit"
    assert client.status().pid != pid
    client.close()


def test_daemons_not_started_on_demand_never_exit_when_idle(fresh_daemon):
    fresh_daemon.env["MEMNEST_IDLE_EXIT_MINUTES"] = "0.01"
    fresh_daemon.start("--service")
    time.sleep(3)
    assert fresh_daemon.proc.poll() is None


def test_a_daemon_whose_stderr_nobody_reads_keeps_serving(fresh_daemon, workspace):
    """Run in the foreground, memnestd copies its log to stderr. A pipe nobody drains holds
    64 KiB; once it is full, the copy must be dropped, not block the calls that log."""
    fresh_daemon.env["MEMORY_LATENCY_WARN_MS"] = "0"  # every call logs a line
    fresh_daemon.start()  # stdout and stderr are pipes this test never reads
    client = fresh_daemon.client(autostart=False)
    started = time.monotonic()
    for i in range(900):  # ~100 bytes of log each: well past what the pipe holds
        client.call_tool("memory_list", {"limit": 1}, str(workspace))
        assert time.monotonic() - started < 120, f"call {i} stalled"
    assert fresh_daemon.log.read_text().count("memory_list took") >= 900
