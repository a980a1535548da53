"""memnestd under a service manager: socket activation exactly as systemd does it, the idle exit
of on-demand daemons, the systemd units and the launchd plist, and `memnest-ctl service`."""
import os
import queue
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from memnest_shims.client import DaemonClient

from support import BIN, old_daemon_command

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


def _ctl_while_activating(fresh_daemon, unit, *args: str) -> tuple[subprocess.CompletedProcess,
                                                                     subprocess.Popen]:
    """Run memnest-ctl as the first connection to a socket unit whose daemon is not running,
    and start the daemon a moment later, as systemd does on that connection."""
    ctl = subprocess.Popen([str(BIN / "memnest-ctl"), *args], env=fresh_daemon.env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.5)  # longer than a plain probe waits
    assert ctl.poll() is None, "memnest-ctl gave up before the daemon could start"
    assert fresh_daemon.pids() == [], "memnest-ctl started a daemon of its own"
    proc = unit.activate(fresh_daemon.env, "--service")
    fresh_daemon.proc = proc
    out, err = ctl.communicate(timeout=120)
    return subprocess.CompletedProcess(ctl.args, ctl.returncode, out, err), proc


def test_status_and_stop_wait_for_a_daemon_the_service_manager_is_starting(fresh_daemon, unit):
    status, proc = _ctl_while_activating(fresh_daemon, unit, "status", "--json")
    assert status.returncode == 0, status.stderr
    import json
    assert json.loads(status.stdout)["pid"] == proc.pid

    proc.send_signal(signal.SIGTERM)  # the idle exit: the unit keeps listening
    assert proc.wait(timeout=60) == 0
    stop, proc = _ctl_while_activating(fresh_daemon, unit, "stop")
    assert stop.returncode == 0 and f"(pid {proc.pid}) stopped" in stop.stdout, stop.stdout
    assert proc.wait(timeout=10) == 0
    assert fresh_daemon.socket.stat().st_ino == unit.inode

    # A socket file nothing listens on (a crash) is answered at once, not waited for: "not
    # running" is what the client says on finding nothing listening, where a client that
    # waited would give up with "did not answer ... within".
    unit.close()
    out = subprocess.run([str(BIN / "memnest-ctl"), "status"], env=fresh_daemon.env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "memnestd is not running on" in out.stderr, out.stderr
    assert "did not answer" not in out.stderr


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
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE", "MEMORY_EMBEDDING_MODEL",
                 "MEMNEST_USER_DIR"):
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


# -- the unit files and the plist ------------------------------------------------------------------

import plistlib  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402

from memnest_shims.cli import service_units as service  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = re.compile(r"@[A-Z_]+@")


@pytest.fixture(scope="session")
def systemd_analyze() -> str:
    """systemd-analyze, installed from Debian's `systemd` package when missing and we are root
    (CI runs as root on a fresh machine); otherwise the test says why it cannot run."""
    found = shutil.which("systemd-analyze")
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.skip("systemd-analyze is not installed and this is not a root Debian/Ubuntu "
                    "machine where the test could install it (apt-get install systemd)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, timeout=600)
    done = subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends",
                           "systemd"], env=env, capture_output=True, text=True, timeout=900)
    found = shutil.which("systemd-analyze")
    if not found:
        pytest.fail(f"apt-get install systemd did not provide systemd-analyze: "
                    f"{done.stderr[-2000:]}")
    return found


def setup_for(tmp_path: Path, **env) -> service.Setup:
    return service.Setup(command=[str(BIN / "memnestd")],
                         socket=tmp_path / "run dir" / "memnestd.sock",
                         env={"MEMORY_EMBEDDING_MODEL": "memnest/all-MiniLM-L6-v2-int8", **env},
                         log_dir=tmp_path / "logs")


def test_unit_files_pass_systemd_analyze_verify(systemd_analyze, tmp_path):
    units = tmp_path / "units"
    units.mkdir()
    rendered = service.render_systemd(setup_for(tmp_path, MEMORY_FUSION="rrf 100%"))
    for name, text in rendered.items():
        assert not PLACEHOLDER.search(text), f"{name} keeps a placeholder"
        (units / name).write_text(text)
    # A short runtime folder: systemd reads the user's other socket units too, whose paths
    # under it (gnupg/S.gpg-agent.browser) outgrow a socket's 108 bytes below a tmp_path
    # that pytest-xdist makes longer (popen-gw1/).
    runtime = Path(tempfile.mkdtemp(prefix="xdg-"))  # created 0700
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "HOME": str(tmp_path),
           "SYSTEMD_LOG_COLOR": "0"}
    try:
        verify = subprocess.run([systemd_analyze, "--user", "verify",
                                 str(units / service.SOCKET_UNIT),
                                 str(units / service.SERVICE_UNIT)],
                                env=env, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    # verify exits 0 even for settings it ignores: any message at all is a finding.
    assert verify.returncode == 0 and not (verify.stdout + verify.stderr).strip(), \
        verify.stdout + verify.stderr
    service_text = rendered[service.SERVICE_UNIT]
    assert f'ExecStart="{BIN / "memnestd"}" "--service" "--socket" ' in service_text
    assert 'Environment="MEMORY_FUSION=rrf 100%%"' in service_text  # % escaped for systemd
    assert f"ListenStream={tmp_path / 'run dir' / 'memnestd.sock'}" in \
        rendered[service.SOCKET_UNIT]


def test_systemd_analyze_catches_a_missing_executable(systemd_analyze, tmp_path):
    """The verification above has teeth: a unit naming a memnestd that does not exist fails."""
    units = tmp_path / "units"
    units.mkdir()
    setup = setup_for(tmp_path)
    setup.command = [str(tmp_path / "no-such" / "memnestd")]
    for name, text in service.render_systemd(setup).items():
        (units / name).write_text(text)
    runtime = Path(tempfile.mkdtemp(prefix="xdg-"))  # short: see the test above
    try:
        verify = subprocess.run([systemd_analyze, "--user", "verify",
                                 str(units / service.SERVICE_UNIT)],
                                env={**os.environ, "XDG_RUNTIME_DIR": str(runtime),
                                     "HOME": str(tmp_path)},
                                capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    assert verify.returncode != 0 or "not executable" in verify.stderr


def test_launchd_plist_parses_and_names_existing_paths(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    setup = setup_for(tmp_path)
    setup.log_dir.mkdir()  # install creates it before loading the plist
    setup.socket.parent.mkdir()
    plist = plistlib.loads(service.render_launchd(setup))
    assert plist["Label"] == service.LABEL
    assert plist["RunAtLoad"] is True
    assert plist["KeepAlive"] == {"SuccessfulExit": False, "Crashed": True}
    program = Path(plist["ProgramArguments"][0])
    assert program.is_absolute() and program.is_file() and os.access(program, os.X_OK)
    assert plist["ProgramArguments"][1:] == ["--service", "--socket", str(setup.socket)]
    assert Path(plist["WorkingDirectory"]).is_dir()
    for key in ("StandardOutPath", "StandardErrorPath"):
        assert Path(plist[key]).parent == setup.log_dir and setup.log_dir.is_dir()
    assert Path(plist["ProgramArguments"][3]).parent.is_dir()
    assert plist["EnvironmentVariables"] == setup.env
    assert not PLACEHOLDER.search(plistlib.dumps(plist).decode())


def test_templates_in_the_repository_are_what_install_uses():
    # The repository's systemd/ and launchd/ folders are the package data install reads.
    pairs = [(service.SYSTEMD_TEMPLATES, ROOT / "systemd", name)
             for name in (service.SERVICE_UNIT, service.SOCKET_UNIT)]
    pairs.append((service.LAUNCHD_TEMPLATES, ROOT / "launchd", f"{service.LABEL}.plist"))
    for packaged, folder, name in pairs:
        assert packaged.joinpath(name).read_bytes() == (folder / name).read_bytes()
    plistlib.loads((ROOT / "launchd" / f"{service.LABEL}.plist").read_bytes())


def test_python_dash_m_fallback_renders_every_word(tmp_path):
    setup = setup_for(tmp_path)
    setup.command = [sys.executable, "-m", "memnest_daemon"]
    text = service.render_systemd(setup)[service.SERVICE_UNIT]
    assert f'ExecStart="{sys.executable}" "-m" "memnest_daemon" "--service"' in text
    plist = plistlib.loads(service.render_launchd(setup))
    assert plist["ProgramArguments"][:4] == [sys.executable, "-m", "memnest_daemon", "--service"]


# -- memnest-ctl service -----------------------------------------------------------------------------

import shlex  # noqa: E402
import subprocess as sp  # noqa: E402

CTL = BIN / "memnest-ctl"


class FakeSystemd:
    """Stands in for `systemctl --user` where no user manager runs (as here and in CI): it
    records each command and does what systemd would with the installed units: binds the
    socket unit's ListenStream= and starts the service's ExecStart= with Environment= and
    the socket as fd 3 (socket activation)."""

    def __init__(self, home: Path):
        self.home = home
        self.calls: list[list[str]] = []
        self.unit: SocketUnit | None = None
        self.proc: subprocess.Popen | None = None

    def __call__(self, cmd: list[str], timeout: float = 60) -> sp.CompletedProcess:
        self.calls.append(cmd)
        assert cmd[:2] == ["systemctl", "--user"], cmd
        verb, out = cmd[2], ""
        if verb == "enable" and "--now" in cmd:
            if self.proc is None or self.proc.poll() is not None:
                self._stop()
                self._start()
        elif verb == "restart":
            self._stop()
            self._start()
        elif verb == "disable" and "--now" in cmd:
            self._stop()
        elif verb == "is-enabled":
            out = "enabled" if self.unit else "disabled"
        elif verb == "is-active":
            out = "active" if self.unit else "inactive"
        elif verb == "show":
            out = str(self.proc.pid if self.proc and self.proc.poll() is None else 0)
        return sp.CompletedProcess(cmd, 0, out + "\n", "")

    def _units(self) -> tuple[str, str]:
        folder = self.home / ".config" / "systemd" / "user"
        return ((folder / service.SERVICE_UNIT).read_text(),
                (folder / service.SOCKET_UNIT).read_text())

    def _start(self) -> None:
        service_text, socket_text = self._units()
        listen = next(ln.split("=", 1)[1] for ln in socket_text.splitlines()
                      if ln.startswith("ListenStream="))
        exec_start = next(ln.split("=", 1)[1] for ln in service_text.splitlines()
                          if ln.startswith("ExecStart="))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home)}  # a manager's bare environment
        for ln in service_text.splitlines():
            if ln.startswith("Environment="):
                key, value = shlex.split(ln.split("=", 1)[1].replace("%%", "%"))[0].split("=", 1)
                env[key] = value
        argv = shlex.split(exec_start.replace("%%", "%"))
        path = Path(listen.replace("%%", "%"))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.unit = SocketUnit(path)
        fd = self.unit.sock.fileno()
        self.proc = subprocess.Popen([sys.executable, "-c", ACTIVATE, str(fd), *argv], env=env,
                                     pass_fds=(fd,), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)

    def _stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        if self.unit is not None:
            self.unit.close()
            self.unit.path.unlink(missing_ok=True)  # RemoveOnStop=yes
            self.unit = None


@pytest.fixture
def user_env(tmp_path, fresh_daemon, monkeypatch) -> Path:
    """This process as a user's shell: a temp HOME, the test daemon's socket, log and model."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE", "MEMORY_EMBEDDING_MODEL",
                 "MEMNEST_USER_DIR"):
        monkeypatch.setenv(name, fresh_daemon.env[name])
    return home


@pytest.fixture
def fake_systemd(user_env, monkeypatch):
    fake = FakeSystemd(user_env)
    monkeypatch.setattr(service, "run", fake)
    monkeypatch.setattr(service, "platform", lambda: "systemd")
    monkeypatch.setattr(service.shutil, "which", lambda name: f"/usr/bin/{name}")
    yield fake
    fake._stop()


def test_install_reports_what_it_did_and_the_service_answers(fake_systemd, fresh_daemon,
                                                             user_env, workspace):
    # An editor already started a daemon on demand: install hands the socket to the manager.
    on_demand = DaemonClient(fresh_daemon.socket, client_name="editor")
    on_demand.call_tool("memory_store", {"content": "written before the service existed"},
                        str(workspace))
    on_demand_pid = on_demand.status().pid
    on_demand.close()

    lines: list[str] = []
    result = service.install(report=service.Report(out=lines.append))
    units = user_env / ".config" / "systemd" / "user"
    assert result["installed"] is True
    assert lines[0] == f"wrote {units / service.SERVICE_UNIT}"
    assert lines[1] == f"wrote {units / service.SOCKET_UNIT}"
    assert lines[2].startswith(f"stopped the running memnestd (pid {on_demand_pid})")
    assert lines[3] == "ran: systemctl --user daemon-reload"
    assert lines[4] == "ran: systemctl --user enable --now memnestd.socket memnestd.service"
    assert lines[5].startswith("memnestd ") and f"(pid {fake_systemd.proc.pid}," in lines[5]
    assert len(lines) == 6
    # The unit carries the real paths and this shell's daemon settings.
    text = (units / service.SERVICE_UNIT).read_text()
    assert f'"{BIN / "memnestd"}" "--service" "--socket" "{fresh_daemon.socket}"' in text
    assert f'Environment="MEMORY_EMBEDDING_MODEL={fresh_daemon.env["MEMORY_EMBEDDING_MODEL"]}"' \
        in text
    # The service-managed daemon was socket-activated and serves the old memories.
    client = fresh_daemon.client(autostart=False)
    found = client.call_tool("memory_search", {"query": "before the service"}, str(workspace))
    assert found["results"][0]["content"] == "written before the service existed"
    assert "(inherited), run by a service manager" in fresh_daemon.log.read_text()

    facts = service.status()
    assert facts["installed"] and facts["up_to_date"] and facts["manager_running"]
    assert facts["daemon"]["run_by"] == "service"
    assert facts["units"][service.SOCKET_UNIT] == {"enabled": "enabled", "active": "active"}

    # Installing again rewrites nothing and still verifies.
    lines.clear()
    service.install(report=service.Report(out=lines.append))
    assert lines[0] == f"unchanged {units / service.SERVICE_UNIT}"

    lines.clear()
    service.uninstall(report=service.Report(out=lines.append))
    assert lines == [
        "ran: systemctl --user disable --now memnestd.service memnestd.socket",
        f"removed {units / service.SERVICE_UNIT}",
        f"removed {units / service.SOCKET_UNIT}",
        "ran: systemctl --user daemon-reload",
        "memnest-mcp starts memnestd on demand again from now on",
    ]
    assert not any(units.iterdir())
    assert not fresh_daemon.socket.exists()


def test_service_managed_daemon_is_restarted_by_its_manager_on_upgrade(fresh_daemon, workspace,
                                                                      monkeypatch):
    """An upgrade of a daemon run with --service: it exits 75 (the units restart on it) and
    the client waits for the manager's new daemon instead of starting its own."""
    for name in ("MEMNEST_SOCKET", "MEMNEST_LOG_FILE", "MEMORY_EMBEDDING_MODEL",
                 "MEMNEST_USER_DIR"):
        monkeypatch.setenv(name, fresh_daemon.env[name])
    old = subprocess.Popen(old_daemon_command("0.0.1", "--service"), env=fresh_daemon.env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fresh_daemon.proc = old
    fresh_daemon.wait_ready()
    restarted = {}

    def manager():  # what Restart=/RestartForceExitStatus=75 or KeepAlive do
        code = old.wait(timeout=120)
        restarted["code"] = code
        restarted["proc"] = subprocess.Popen([str(BIN / "memnestd"), "--service"],
                                             env=fresh_daemon.env, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.DEVNULL)

    import threading
    watcher = threading.Thread(target=manager)
    watcher.start()
    client = DaemonClient(fresh_daemon.socket, client_name="memnest-mcp")
    assert client.call_tool("memory_stats", {}, str(workspace))["memories"] == 0
    watcher.join(timeout=120)
    assert restarted["code"] == 75
    assert client.status().pid == restarted["proc"].pid  # no on-demand daemon of its own
    assert client.upgraded_from == "0.0.1"
    fresh_daemon.proc = restarted["proc"]


def _cli_env(home: Path, fresh_daemon, tmp_path: Path) -> dict:
    runtime = tmp_path / "no-user-manager"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {**fresh_daemon.env, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime)}
    for name in ("XDG_CONFIG_HOME", "DBUS_SESSION_BUS_ADDRESS"):
        env.pop(name, None)
    return env


def test_install_without_a_user_manager_says_so_and_writes_nothing(tmp_path, fresh_daemon):
    home = tmp_path / "home"
    home.mkdir()
    out = sp.run([str(CTL), "service", "install"], env=_cli_env(home, fresh_daemon, tmp_path),
                 capture_output=True, text=True, timeout=60)
    assert out.returncode == 3, out.stderr  # not success: nothing was installed
    assert out.stdout.startswith("Not installed: ")
    assert "memnest-mcp starts memnestd on demand" in out.stdout
    assert not any(home.rglob("*"))


def test_dry_run_prints_the_files_and_commands_and_touches_nothing(tmp_path, fresh_daemon):
    home = tmp_path / "home"
    home.mkdir()
    out = sp.run([str(CTL), "service", "install", "--dry-run"],
                 env=_cli_env(home, fresh_daemon, tmp_path), capture_output=True, text=True,
                 timeout=60)
    assert out.returncode == 0, out.stderr
    units = home / ".config" / "systemd" / "user"
    assert f"# would write {units / 'memnestd.service'}:" in out.stdout
    assert f"# would write {units / 'memnestd.socket'}:" in out.stdout
    assert f"ListenStream={fresh_daemon.socket}" in out.stdout
    assert f'"{BIN / "memnestd"}" "--service"' in out.stdout
    assert "would run: systemctl --user daemon-reload" in out.stdout
    assert "would run: systemctl --user enable --now memnestd.socket memnestd.service" in \
        out.stdout
    assert "a real install would do nothing" in out.stdout
    assert not any(home.rglob("*"))
    assert fresh_daemon.pids() == []


def test_service_status_and_uninstall_when_nothing_is_installed(tmp_path, fresh_daemon):
    home = tmp_path / "home"
    home.mkdir()
    env = _cli_env(home, fresh_daemon, tmp_path)
    status = sp.run([str(CTL), "service", "status"], env=env, capture_output=True, text=True,
                    timeout=60)
    assert status.returncode == 0, status.stderr
    assert "not installed as a service: editors start it on demand" in status.stdout
    gone = sp.run([str(CTL), "service", "uninstall"], env=env, capture_output=True, text=True,
                  timeout=60)
    assert gone.returncode == 0 and "nothing to do" in gone.stdout


# -- logs and doctor -----------------------------------------------------------------------------------

def ctl_run(*args, env: dict, timeout: float = 60) -> sp.CompletedProcess:
    return sp.run([str(CTL), *args], env=env, capture_output=True, text=True, timeout=timeout)


def test_logs_shows_the_tail_and_follows(fresh_daemon, tmp_path):
    fresh_daemon.start()
    env = _cli_env(tmp_path / "home", fresh_daemon, tmp_path)
    last = fresh_daemon.log.read_text().splitlines()[-2:]
    out = ctl_run("logs", "-n", "2", env=env)
    assert out.returncode == 0 and out.stdout.splitlines() == last
    follower = sp.Popen([str(CTL), "logs", "-f", "-n", "0"], env=env, stdout=sp.PIPE, text=True)
    shown: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [shown.put(line) for line in follower.stdout],
                     daemon=True).start()
    try:
        # It follows from the end of the log as it found it when it opened it (a line written
        # before that is rightly not shown; on a busy machine its start takes seconds): write
        # a line at a time until one is shown.
        seen: list[str] = []
        deadline = time.monotonic() + 60
        n = 0
        while not any(line.startswith("a line written while following") for line in seen):
            assert time.monotonic() < deadline, f"memnest-ctl logs -f showed nothing: {seen}"
            with open(fresh_daemon.log, "a") as f:
                f.write(f"a line written while following ({n})\n")
            n += 1
            try:
                seen.append(shown.get(timeout=0.5))
            except queue.Empty:
                pass
        assert all(line.endswith("\n") for line in seen)
        assert not {line.rstrip("\n") for line in seen} & set(last)  # -n 0: no old line
    finally:
        follower.terminate()
        follower.wait(timeout=10)


def test_logs_without_a_log_says_where_it_looked(tmp_path, fresh_daemon):
    env = _cli_env(tmp_path / "home", fresh_daemon, tmp_path)
    out = ctl_run("logs", env=env)
    assert out.returncode == 1 and str(fresh_daemon.log) in out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_doctor_all_ok_with_a_healthy_daemon(fresh_daemon, tmp_path, workspace):
    fresh_daemon.start()
    fresh_daemon.client().call_tool("memory_store", {"content": "doctor checks this database"},
                                    str(workspace))
    home = tmp_path / "home"
    home.mkdir()
    out = ctl_run("doctor", env=_cli_env(home, fresh_daemon, tmp_path))
    lines = out.stdout.splitlines()
    assert out.returncode == 0, out.stdout + out.stderr
    assert all(ln.startswith("ok  ") for ln in lines), out.stdout
    names = [ln[6:].split(":")[0] for ln in lines]
    assert names[:6] == ["socket folder", "socket", "daemon", "versions", "model",
                         f"database {workspace / '.memnest' / 'memory.lbug'}"]
    assert names[-3:] == ["log", "memnest-mcp", "service"]
    assert "verified healthy" in lines[5]
    assert "editors start memnestd on demand" in lines[-1]


def test_doctor_names_each_failure_and_its_fix(fresh_daemon, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = _cli_env(home, fresh_daemon, tmp_path)
    # No daemon, the normal state after an idle exit: healthy, it starts on demand.
    out = ctl_run("doctor", env=env)
    assert out.returncode == 0, out.stdout
    assert not [ln for ln in out.stdout.splitlines() if ln.startswith("FAIL")], out.stdout
    assert "the first call from an editor or memnest-ctl starts it" in out.stdout
    # A socket file nothing answers on: left by a crash.
    fresh_daemon.socket.write_text("")
    out = ctl_run("doctor", env=env)
    failed = {ln.split(":")[0][6:]: ln for ln in out.stdout.splitlines()
              if ln.startswith("FAIL")}
    assert out.returncode == 1 and set(failed) == {"socket", "daemon"}, out.stdout
    assert "fix: `memnest-ctl start`" in failed["daemon"]
    fresh_daemon.socket.unlink()

    os.chmod(fresh_daemon.root, 0o755)
    out = ctl_run("doctor", env=env)
    line = next(ln for ln in out.stdout.splitlines() if "socket folder" in ln)
    assert line.startswith("FAIL") and f"fix: chmod 700 {fresh_daemon.root}" in line
    os.chmod(fresh_daemon.root, 0o700)

    # An older daemon, and a shell that would start another model.
    fresh_daemon.proc = sp.Popen(old_daemon_command("0.0.1"), env=fresh_daemon.env,
                                 stdout=sp.DEVNULL, stderr=sp.DEVNULL)
    fresh_daemon.wait_ready()
    out = ctl_run("doctor", "--json", env={**env, "MEMORY_EMBEDDING_MODEL": "BAAI/other"})
    assert out.returncode == 1
    import json
    findings = {f["check"]: f for f in json.loads(out.stdout)}
    assert not findings["versions"]["ok"] and "older" in findings["versions"]["detail"]
    assert not findings["model"]["ok"] and "BAAI/other" in findings["model"]["detail"]
    assert findings["daemon"]["ok"] and findings["socket"]["ok"]
    assert fresh_daemon.proc.poll() is None  # doctor never upgrades or starts anything


def test_a_daemon_whose_stderr_nobody_reads_keeps_serving(fresh_daemon, workspace):
    """Run in the foreground, memnestd copies its log to stderr. A pipe nobody drains holds
    64 KiB; once it is full, the copy must be dropped, not block the calls that log."""
    fresh_daemon.env["MEMORY_LATENCY_WARN_MS"] = "0"  # every call logs a line
    fresh_daemon.start()  # stdout and stderr are pipes this test never reads
    client = fresh_daemon.client(autostart=False)
    answered, failed = [], []

    def calls() -> None:
        try:
            for i in range(900):  # ~100 bytes of log each: well past what the pipe holds
                client.call_tool("memory_list", {"limit": 1}, str(workspace))
                answered.append(i)
        except Exception as exc:  # noqa: BLE001 - reported below
            failed.append(exc)

    caller = threading.Thread(target=calls, daemon=True)
    caller.start()
    while caller.is_alive():  # a blocked call never answers: fail on a minute without one
        before = len(answered)
        caller.join(timeout=60)
        assert len(answered) > before or not caller.is_alive(), f"call {before} stalled"
    assert not failed, failed
    assert len(answered) == 900
    assert fresh_daemon.log.read_text().count("memory_list took") >= 900


def test_doctor_socket_mode_fix_names_the_owner_of_the_socket(fake_systemd, fresh_daemon,
                                                               user_env):
    from memnest_shims.cli import doctor
    service.install(report=service.Report(out=lambda line: None))
    os.chmod(fresh_daemon.socket, 0o666)  # as a hand-edited socket unit would leave it
    found = {f.check: f for f in doctor.run_checks()}
    assert not found["socket"].ok
    # Stopping the daemon would not help: the socket unit, not memnestd, makes the socket.
    assert "memnest-ctl stop" not in found["socket"].fix
    assert "systemctl --user restart memnestd.socket" in found["socket"].fix
    assert found["daemon"].ok  # the service-managed daemon answers

    service.uninstall(report=service.Report(out=lambda line: None))
    fresh_daemon.start()  # on demand: memnestd owns the socket and recreates it 0600
    os.chmod(fresh_daemon.socket, 0o666)
    found = {f.check: f for f in doctor.run_checks()}
    assert not found["socket"].ok and "`memnest-ctl stop`" in found["socket"].fix
