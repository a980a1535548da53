"""A remote daemon: memnestd on TCP with mutual TLS, reached through MEMNEST_REMOTE by the real
memnest-ctl and the real memnest-mcp shim, with certificates made by `memnest-ctl tls`."""
import datetime
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
import grpc
import pytest

from support import BIN, Daemon, error_text, result_json
from memnest_proto import memnest_pb2 as pb
from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_shims.cli import tls_setup
from memnest_shims.client import DaemonClient
from memnest_shims.errors import DaemonUnavailable, ToolFailure

REMOTE_VARS = ("MEMNEST_REMOTE", "MEMNEST_TLS_CA", "MEMNEST_TLS_CERT", "MEMNEST_TLS_KEY",
               "MEMNEST_TLS_LISTEN", "MEMNEST_TLS_DIR", "MEMNEST_TLS_CLIENTS",
               "MEMNEST_TLS_SERVER_NAME")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ctl(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "memnest-ctl"), *args], env=env, capture_output=True,
                          text=True, timeout=120)


class Remote:
    """A daemon listening on its Unix socket and on 127.0.0.1:<port> with mutual TLS."""

    def __init__(self, root: Path):
        self.root = root
        self.tls = root / "tls"
        self.other = root / "other-ca"
        self.allowed = root / "projects" / "app"
        self.sibling = root / "projects" / "secret"
        for folder in (self.allowed, self.sibling):
            folder.mkdir(parents=True)
        self.daemon = Daemon(root / "run")
        self.base_env = {k: v for k, v in self.daemon.env.items() if k not in REMOTE_VARS}
        made = ctl("tls", "init", "--dir", str(self.tls), env=self.base_env)
        assert made.returncode == 0, made.stderr
        assert "MEMNEST_TLS_LISTEN" in made.stdout and "server.key" in made.stdout
        made = ctl("tls", "client", "alice", "--dir", str(self.tls), "--allow",
                   str(self.allowed), env=self.base_env)
        assert made.returncode == 0, made.stderr
        assert "MEMNEST_REMOTE=" in made.stdout and "MEMNEST_TLS_CERT=" in made.stdout
        assert ctl("tls", "client", "bob", "--dir", str(self.tls),
                   env=self.base_env).returncode == 0
        # a certificate authority of its own, and a client certificate it signed
        assert ctl("tls", "init", "--dir", str(self.other), env=self.base_env).returncode == 0
        assert ctl("tls", "client", "alice", "--dir", str(self.other),
                   env=self.base_env).returncode == 0
        # alice's name and our CA, but expired yesterday
        ca_key, ca_cert = tls_setup.load_ca(self.tls)
        now = datetime.datetime.now(datetime.timezone.utc)
        key, cert = tls_setup.issue(ca_key, ca_cert, "alice", server=False,
                                    not_before=now - datetime.timedelta(days=30),
                                    not_after=now - datetime.timedelta(days=1))
        tls_setup.write_private(self.tls / "expired.key", tls_setup.key_pem(key), False)
        tls_setup.write_private(self.tls / "expired.crt", tls_setup.cert_pem(cert), False)
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.stderr = root / "memnestd.stderr"

    def start(self) -> None:
        self.daemon.env = {**self.base_env, "MEMNEST_TLS_LISTEN": self.address,
                           "MEMNEST_TLS_DIR": str(self.tls)}
        with open(self.stderr, "w") as err:
            self.daemon.proc = subprocess.Popen([str(BIN / "memnestd")], env=self.daemon.env,
                                                stdout=err, stderr=err, text=True)
        self.daemon.wait_ready()

    def client_env(self, name: str = "alice", ca_dir: Path | None = None,
                   cert: str | None = None) -> dict:
        """What a client machine sets: no socket of the daemon's (a path that does not
        exist, so nothing local can be used), the remote address and its certificate."""
        ca_dir = ca_dir or self.tls
        cert = cert or str(ca_dir / "clients" / name)
        return {**self.base_env, "MEMNEST_SOCKET": str(self.root / "nowhere" / "none.sock"),
                "MEMNEST_REMOTE": self.address, "MEMNEST_TLS_CA": str(self.tls / "ca.crt"),
                "MEMNEST_TLS_CERT": cert + ".crt", "MEMNEST_TLS_KEY": cert + ".key",
                "MEMORY_WORKSPACE": str(self.allowed)}

    def channel(self, name: str | None = "alice") -> grpc.Channel:
        ca = (self.tls / "ca.crt").read_bytes()
        if name is None:
            return grpc.secure_channel(self.address, grpc.ssl_channel_credentials(ca))
        folder = self.tls / "clients"
        return grpc.secure_channel(self.address, grpc.ssl_channel_credentials(
            ca, (folder / f"{name}.key").read_bytes(), (folder / f"{name}.crt").read_bytes()))

    def daemon_says(self, text: str, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr.read_text(errors="replace"):
                return True
            time.sleep(0.1)
        return False


@pytest.fixture(scope="module")
def remote():
    r = Remote(Path(tempfile.mkdtemp(prefix="memnest-tls-")))
    r.start()
    yield r
    r.daemon.stop()
    shutil.rmtree(r.root, ignore_errors=True)


def remote_client(monkeypatch, env: dict) -> DaemonClient:
    for name in REMOTE_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in ("MEMNEST_REMOTE", "MEMNEST_TLS_CA", "MEMNEST_TLS_CERT", "MEMNEST_TLS_KEY",
                 "MEMNEST_SOCKET"):
        if name in env:
            monkeypatch.setenv(name, env[name])
    return DaemonClient(client_name="tests")


# -- refused -------------------------------------------------------------------------------------

def test_a_client_without_a_certificate_is_refused(remote, monkeypatch):
    env = remote.client_env()
    del env["MEMNEST_TLS_CERT"], env["MEMNEST_TLS_KEY"]
    client = remote_client(monkeypatch, env)
    with pytest.raises(DaemonUnavailable, match="MEMNEST_TLS_CERT is not"):
        client.call_tool("memory_stats", {}, str(remote.allowed))
    # and the daemon itself closes a TLS connection that shows no certificate
    with pytest.raises(grpc.RpcError) as refused:
        pb_grpc.MemnestStub(remote.channel(None)).Status(pb.StatusRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    assert remote.daemon_says("PEER_DID_NOT_RETURN_A_CERTIFICATE")


def test_a_certificate_from_another_ca_is_refused(remote, monkeypatch):
    client = remote_client(monkeypatch, remote.client_env(ca_dir=remote.other))
    with pytest.raises(DaemonUnavailable) as refused:
        client.call_tool("memory_stats", {}, str(remote.allowed))
    message = str(refused.value)
    assert f"memnestd did not answer at {remote.address}" in message
    assert "was not signed by the CA in" in message
    assert "never started or upgraded from here" in message
    assert remote.daemon_says("unable to get local issuer certificate")


def test_an_expired_certificate_is_refused(remote, monkeypatch):
    client = remote_client(monkeypatch, remote.client_env(cert=str(remote.tls / "expired")))
    with pytest.raises(DaemonUnavailable) as refused:
        client.call_tool("memory_stats", {}, str(remote.allowed))
    assert "expired on" in str(refused.value)
    assert remote.address in str(refused.value)
    assert remote.daemon_says("certificate has expired")


def test_plain_tcp_to_the_tls_port_fails(remote):
    channel = grpc.insecure_channel(remote.address)
    with pytest.raises(grpc.RpcError) as refused:
        pb_grpc.MemnestStub(channel).Status(pb.StatusRequest(), timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    channel.close()


def test_a_client_is_held_to_its_workspaces(remote, monkeypatch):
    clients = str(remote.tls / "clients.json")
    bob = ctl("store", "bob was here", env=remote.client_env("bob"))
    assert bob.returncode == 1
    assert f"tls client 'bob' may not use workspace '{remote.allowed}'" in bob.stderr
    assert "its allowed folders are none" in bob.stderr and clients in bob.stderr

    alice = remote_client(monkeypatch, remote.client_env())
    with pytest.raises(ToolFailure) as refused:
        alice.call_tool("memory_search", {"query": "x"}, str(remote.sibling))
    assert refused.value.code == "permission_denied"
    assert f"'alice' may not use workspace '{remote.sibling}'" in refused.value.message
    assert str(remote.allowed) in refused.value.message and clients in refused.value.message
    # ../ out of an allowed folder is the folder it leads to
    with pytest.raises(ToolFailure, match="may not use workspace"):
        alice.call_tool("memory_stats", {}, f"{remote.allowed}/../secret")
    # a database file of its choosing, or a session pinned elsewhere: refused too
    with pytest.raises(ToolFailure, match="may not choose the database file"):
        alice.call_tool("memory_stats", {}, str(remote.allowed),
                        db_path=str(remote.sibling / "x.lbug"))
    with pytest.raises(ToolFailure, match="may not use workspace"):
        alice.call_tool("memory_set_workspace", {"workspace": "../secret"},
                        str(remote.allowed))
    alice.close()


def test_admin_calls_are_refused_over_tls(remote):
    stub = pb_grpc.MemnestStub(remote.channel("alice"))
    for upgrade in (False, True):
        with pytest.raises(grpc.RpcError) as refused:
            stub.Shutdown(pb.ShutdownRequest(reason="test", upgrade=upgrade), timeout=5)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert "may not stop or upgrade memnestd" in refused.value.details()
    stop = ctl("stop", env=remote.client_env())
    assert stop.returncode == 1 and "only its local user may stop it" in stop.stderr
    assert remote.daemon.client(autostart=False).is_running()


# -- allowed -------------------------------------------------------------------------------------

def test_cli_stores_and_searches_on_the_remote_daemon(remote):
    env = remote.client_env()
    stored = ctl("store", "The release train leaves every second Tuesday", "--json", env=env)
    assert stored.returncode == 0, stored.stderr
    memory_id = json.loads(stored.stdout)["id"]
    found = ctl("search", "when does the release train leave", "--json", env=env)
    assert found.returncode == 0, found.stderr
    assert memory_id in [r["id"] for r in json.loads(found.stdout)["results"]]
    # a long call streams its progress over TLS as over the socket
    verified = ctl("verify", "--quick", "--json", env=env)
    assert verified.returncode == 0, verified.stderr
    assert str(remote.allowed) in verified.stdout
    # the workspace is a folder of the daemon's machine: --workspace is not resolved here
    moved = ctl("search", "release train", "--workspace", str(remote.allowed), "--json",
                env={**env, "MEMORY_WORKSPACE": ""}, )
    assert moved.returncode == 0, moved.stderr
    none = ctl("search", "release train", env={**env, "MEMORY_WORKSPACE": ""})
    assert none.returncode == 1 and "MEMNEST_REMOTE is set" in none.stderr
    # status over TLS: versions, and only the workspaces this client may use
    status = ctl("status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    facts = json.loads(status.stdout)
    assert facts["running"] and facts["socket"] == "" and facts["log"] == ""
    assert {w["workspace"] for w in facts["workspaces"]} <= {str(remote.allowed)}
    # export and import name files on the daemon's machine
    exported = ctl("export", "--json", env=env)
    assert exported.returncode == 0, exported.stderr
    path = json.loads(exported.stdout)["path"]
    assert path.startswith(str(remote.allowed))
    elsewhere = ctl("export", "here.json", env=env)
    assert elsewhere.returncode == 1 and "on the daemon's machine" in elsewhere.stderr
    loaded = ctl("import", path, "--json", env=env)
    assert loaded.returncode == 0, loaded.stderr
    assert json.loads(loaded.stdout)["memories"]["duplicate"] == 1


def test_the_shim_works_through_the_remote_daemon(remote, tmp_path):
    env = remote.client_env()

    async def body():
        # the editor runs in a folder of its own machine: not the workspace
        async with remote.daemon.mcp(tmp_path, **env) as s:
            stored = result_json(await s.call_tool("memory_store", {
                "content": "Remote memories are signed by the client's certificate"}))
            found = result_json(await s.call_tool("memory_search", {
                "query": "who signs remote memories"}))
            assert stored["id"] in [r["id"] for r in found["results"]]
            got = result_json(await s.call_tool("memory_get", {"ids": [stored["id"]]}))
            stats = result_json(await s.call_tool("memory_stats", {}))
            refused = error_text(await s.call_tool("memory_set_workspace", {
                "workspace": str(remote.sibling)}))
        return got, stats, refused

    got, stats, refused = anyio.run(body)
    memory = got["memories"][0] if "memories" in got else got
    assert memory["origin"]["client"] == "tls:alice"
    assert memory["origin"]["via"] == "agent"
    assert stats["workspace"] == str(remote.allowed)
    assert "permission_denied" in refused and "'alice' may not use workspace" in refused


def test_the_shim_needs_a_remote_workspace(remote, tmp_path):
    env = {**remote.client_env(), "MEMORY_WORKSPACE": ""}

    async def body():
        async with remote.daemon.mcp(tmp_path, **env) as s:
            return error_text(await s.call_tool("memory_stats", {}))

    assert "MEMNEST_REMOTE is set" in anyio.run(body)


def test_a_remote_daemon_that_does_not_answer_is_named(remote, monkeypatch):
    env = {**remote.client_env(), "MEMNEST_REMOTE": f"127.0.0.1:{free_port()}"}
    client = remote_client(monkeypatch, env)
    with pytest.raises(DaemonUnavailable) as gone:
        client.call_tool("memory_stats", {}, str(remote.allowed))
    assert f"memnestd did not answer at {env['MEMNEST_REMOTE']}" in str(gone.value)
    assert not (remote.root / "nowhere").exists()  # nothing was started here


# -- the daemon refuses unsafe configurations ----------------------------------------------------

def _start_refused(remote, tmp_path, env: dict) -> str:
    daemon = Daemon(tmp_path / "run")
    proc = subprocess.run([str(BIN / "memnestd")], env={**daemon.env, **env},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert not daemon.socket.exists()
    return proc.stderr


def test_a_shared_key_file_makes_memnestd_refuse_to_start(remote, tmp_path):
    folder = tmp_path / "tls"
    shutil.copytree(remote.tls, folder)
    os.chmod(folder / "server.key", 0o644)
    err = _start_refused(remote, tmp_path, {"MEMNEST_TLS_LISTEN": f"127.0.0.1:{free_port()}",
                                            "MEMNEST_TLS_DIR": str(folder)})
    assert f"the server key {folder / 'server.key'} has permissions 644" in err
    os.chmod(folder / "server.key", 0o600)
    (folder / "ca.crt").unlink()
    err = _start_refused(remote, tmp_path, {"MEMNEST_TLS_LISTEN": f"127.0.0.1:{free_port()}",
                                            "MEMNEST_TLS_DIR": str(folder)})
    assert f"the CA certificate {folder / 'ca.crt'} does not exist" in err
    err = _start_refused(remote, tmp_path, {"MEMNEST_TLS_LISTEN": f"127.0.0.1:{free_port()}"})
    assert "--listen-tls needs the server certificate" in err


def test_tls_client_refuses_to_overwrite_a_key(remote):
    again = ctl("tls", "client", "alice", "--dir", str(remote.tls), env=remote.base_env)
    assert again.returncode == 1 and "exists; give --force" in again.stderr
    mode = os.stat(remote.tls / "clients" / "alice.key").st_mode & 0o777
    assert mode == 0o600 and os.stat(remote.tls).st_mode & 0o777 == 0o700


def test_versions_are_checked_but_a_remote_daemon_is_never_upgraded(remote, monkeypatch):
    remote_client(monkeypatch, remote.client_env())
    newer = DaemonClient(client_name="tests", version="99.0.0")
    assert newer.remote == remote.address and not newer.autostart
    pid = remote.daemon.client(autostart=False).status().pid
    assert newer.call_tool("memory_stats", {}, str(remote.allowed))["workspace"] == \
        str(remote.allowed)
    assert remote.daemon.client(autostart=False).status().pid == pid  # not replaced
    assert newer.upgraded_from is None
    newer.close()
    other = DaemonClient(client_name="tests", protocol=999)
    with pytest.raises(DaemonUnavailable, match="speaks protocol") as refused:
        other.call_tool("memory_stats", {}, str(remote.allowed))
    assert remote.address in str(refused.value)
    other.close()


def test_the_agent_hook_recalls_from_the_remote_daemon(remote, tmp_path):
    env = {**remote.client_env(), "MEMNEST_HOOK_BUDGET_MS": "20000",
           "CLAUDE_PROJECT_DIR": str(tmp_path)}  # the editor's folder: not the workspace
    stored = ctl("store", "Remote hooks recall the blue-green deploy decision", "--json",
                 "--importance", "5", env=env)
    assert stored.returncode == 0, stored.stderr
    memory_id = json.loads(stored.stdout)["id"]
    out = subprocess.run([str(BIN / "memnest-hook"), "session-start"],
                         input=json.dumps({"session_id": "remote-hook", "cwd": str(tmp_path),
                                           "hook_event_name": "SessionStart",
                                           "source": "startup"}).encode(),
                         env=env, cwd=str(tmp_path), capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert f"[#{memory_id} " in text


def test_the_allow_list_takes_folders_globs_and_their_real_paths(tmp_path):
    from memnest_daemon.server.tls import ClientPolicy

    real = tmp_path / "data" / "projects"
    (real / "app" / "src").mkdir(parents=True)
    (real / "lib" / "one").mkdir(parents=True)
    (real / "other").mkdir()
    (tmp_path / "srv").symlink_to(tmp_path / "data")
    (real / "app" / "escape").symlink_to(real / "other")
    rules = tmp_path / "clients.json"
    rules.write_text(json.dumps({"alice": [str(tmp_path / "srv" / "projects" / "app"),
                                           str(real / "lib" / "*")], "bob": []}))
    os.chmod(rules, 0o600)
    policy = ClientPolicy(rules)
    srv = tmp_path / "srv" / "projects"
    assert policy.allows("alice", str(srv / "app"))
    assert policy.allows("alice", str(srv / "app" / "src"))
    assert policy.allows("alice", str(real / "lib" / "one"))
    assert not policy.allows("alice", str(real / "lib"))  # the glob names its children
    assert not policy.allows("alice", str(srv / "app" / "escape"))  # leads out
    assert not policy.allows("alice", str(srv / "app" / ".." / "other"))
    assert not policy.allows("alice", str(srv / "application"))
    assert not policy.allows("bob", str(srv / "app"))
    assert not policy.allows("carol", str(srv / "app"))
    assert not policy.allows("alice", "relative/app")
    # where a path was found to lead (a resolved workspace, an opened folder): the real path
    # of an allowed folder reached through a link is inside it, one that leads out is not
    assert policy.allows("alice", str(srv / "app" / "src"), str(real / "app" / "src"))
    assert not policy.allows("alice", str(srv / "app" / "src"), str(real / "other"))
    assert policy.allows_real("alice", str(real / "app" / "src"))
    assert not policy.allows_real("alice", str(real / "other"))
    # read again when it changes; a file others may write is refused as a whole
    rules.write_text(json.dumps({"bob": [str(real / "other")]}))
    os.utime(rules, ns=(1, 1))
    assert policy.allows("bob", str(real / "other")) and not policy.allows("alice",
                                                                            str(srv / "app"))
    os.chmod(rules, 0o666)
    os.utime(rules, ns=(2, 2))
    assert not policy.allows("bob", str(real / "other"))


# -- every path a remote client names stays in its allowed folders -------------------------------

SECRET = "The sibling project's vault opens with the word marmalade"


def _local(remote, monkeypatch) -> DaemonClient:
    """The daemon's own user, on its Unix socket."""
    for name in REMOTE_VARS:
        monkeypatch.delenv(name, raising=False)
    return remote.daemon.client(autostart=False)


def _sibling_export(remote, monkeypatch) -> str:
    """A private memory of the workspace alice may not use, exported there by the local user."""
    local = _local(remote, monkeypatch)
    local.call_tool("memory_store", {"content": SECRET}, str(remote.sibling))
    path = local.call_tool("memory_export", {}, str(remote.sibling))["path"]
    local.close()
    assert path.startswith(str(remote.sibling / ".memnest" / "exports"))
    return path


def _refusal(client, tool: str, arguments: dict, workspace) -> ToolFailure:
    with pytest.raises(ToolFailure) as refused:
        client.call_tool(tool, arguments, str(workspace))
    return refused.value


def test_a_remote_client_cannot_import_another_workspaces_export(remote, monkeypatch):
    exported = _sibling_export(remote, monkeypatch)
    alice = remote_client(monkeypatch, remote.client_env())
    refused = _refusal(alice, "memory_import", {"path": exported}, remote.allowed)
    assert refused.code == "not_found"
    assert f"no file at {exported!r} that this client may read" in refused.message
    assert str(remote.allowed) in refused.message  # where it may read instead
    assert "marmalade" not in refused.message
    for scope in ({}, {"global_search": True}):
        found = alice.call_tool("memory_search", {"query": "vault word marmalade", **scope},
                                str(remote.allowed))
        assert "marmalade" not in json.dumps(found)
    alice.close()
    # the daemon's own user still imports from anywhere it may read
    mine = remote.root / "projects" / "local-only"
    mine.mkdir()
    local = _local(remote, monkeypatch)
    loaded = local.call_tool("memory_import", {"path": exported}, str(mine))
    assert loaded["memories"]["stored"] == 1
    found = local.call_tool("memory_search", {"query": "vault word marmalade"}, str(mine))
    assert "marmalade" in json.dumps(found)
    local.close()


def test_what_is_outside_gets_one_answer_whatever_is_there(remote, monkeypatch):
    exported = _sibling_export(remote, monkeypatch)
    folder = remote.sibling / ".memnest" / "exports"
    unreadable = remote.sibling / "unreadable.json"
    unreadable.write_text("{}")
    os.chmod(unreadable, 0)
    (remote.allowed / "sub").mkdir(exist_ok=True)
    # inside the allowed folder as written, outside it where the links lead
    (remote.allowed / "escape").symlink_to(remote.sibling)
    (remote.allowed / "linked.json").symlink_to(exported)
    leads_out = str(remote.allowed / "escape" / ".memnest" / "exports" /
                    os.path.basename(exported))
    paths = [exported, str(folder / "missing.json"), str(folder), str(unreadable),
             "/nonexistent/at/all.json", leads_out, str(remote.allowed / "linked.json")]
    alice = remote_client(monkeypatch, remote.client_env())
    answers = set()
    for path in paths:
        refused = _refusal(alice, "memory_import", {"path": path}, remote.allowed / "sub")
        assert path in refused.message, refused.message
        answers.add((refused.code, refused.message.replace(repr(path), "<path>")))
    assert len(answers) == 1, answers
    code, message = answers.pop()
    assert code == "not_found" and message.startswith("no file at <path> that this client")
    # a missing file inside the workspace answers the same way
    refused = _refusal(alice, "memory_import", {"path": "nothing/here.json"}, remote.allowed)
    assert (refused.code, refused.message.replace("'nothing/here.json'", "<path>")) == \
        (code, message)
    # inside its allowed folders a remote client reads, from another workspace there too
    mine = alice.call_tool("memory_export", {}, str(remote.allowed))["path"]
    loaded = alice.call_tool("memory_import", {"path": mine}, str(remote.allowed / "sub"))
    assert loaded["path"] == mine and loaded["memories"]["in_file"] >= 1
    alice.close()
    os.chmod(unreadable, 0o600)


def test_a_remote_client_writes_only_under_its_workspaces_memnest(remote, monkeypatch):
    alice = remote_client(monkeypatch, remote.client_env())
    home = os.path.expanduser("~")
    for tool in ("memory_export", "memory_graph_html"):
        for path in (str(remote.sibling / "out.file"), str(remote.allowed / "out.file"),
                     "out.file", "~/out.file"):
            refused = _refusal(alice, tool, {"path": path}, remote.allowed)
            assert refused.code == "permission_denied", refused.message
            assert f"for a remote client only under {remote.allowed}/.memnest/" in \
                refused.message
            assert repr(path) in refused.message
            if home != "/":
                assert home not in refused.message.replace(str(remote.root), "")
        written = alice.call_tool(tool, {"path": f".memnest/{tool}.out"}, str(remote.allowed))
        assert written["path"] == str(remote.allowed / ".memnest" / f"{tool}.out")
    assert not (remote.sibling / "out.file").exists()
    assert not (remote.allowed / "out.file").exists()
    alice.close()


def test_set_workspace_is_held_to_the_allowed_folders(remote, monkeypatch):
    (remote.allowed / "door").symlink_to(remote.sibling)
    alice = remote_client(monkeypatch, remote.client_env())
    refused = _refusal(alice, "memory_set_workspace", {"workspace": "door"}, remote.allowed)
    assert refused.code == "permission_denied" and "may not use workspace" in refused.message
    refused = _refusal(alice, "memory_set_workspace", {"workspace": "~"}, remote.allowed)
    assert refused.code == "permission_denied" and "'~'" in refused.message
    refused = _refusal(alice, "memory_set_workspace",
                       {"workspace": ".", "db_path": str(remote.sibling / "x.lbug")},
                       remote.allowed)
    assert "takes no db_path over TLS" in refused.message
    (remote.allowed / "inner").mkdir(exist_ok=True)
    pinned = alice.call_tool("memory_set_workspace", {"workspace": "inner"},
                             str(remote.allowed))
    assert pinned["session"]["workspace"] == str(remote.allowed / "inner")
    alice.close()


def test_the_shim_carries_the_confinement(remote, tmp_path, monkeypatch):
    exported = _sibling_export(remote, monkeypatch)

    async def body():
        async with remote.daemon.mcp(tmp_path, **remote.client_env()) as s:
            return error_text(await s.call_tool("memory_import", {"path": exported}))

    refused = anyio.run(body)
    assert "not_found" in refused and "that this client may read" in refused


def test_a_shared_database_shows_a_remote_client_only_its_workspaces(remote, monkeypatch):
    """A workspace of the local user's keeps its memories in alice's database file
    (MEMORY_DB_PATH): alice sees none of them, and memory_query, which sees the whole file, is
    refused to her."""
    theirs = remote.root / "projects" / "theirs"
    theirs.mkdir()
    (remote.allowed / ".memnest").mkdir(mode=0o700, exist_ok=True)
    shared_db = str(remote.allowed / ".memnest" / "memory.lbug")
    local = _local(remote, monkeypatch)
    local.call_tool("memory_store", {"content": "The payroll export runs at dawn on Fridays"},
                    str(theirs), db_path=shared_db)
    found = local.call_tool("memory_search", {"query": "payroll export", "global_search": True},
                            str(remote.allowed))
    assert "payroll" in json.dumps(found)  # the local user searches the whole file
    local.close()
    alice = remote_client(monkeypatch, remote.client_env())
    found = alice.call_tool("memory_search", {"query": "payroll export", "global_search": True},
                            str(remote.allowed))
    assert "payroll" not in json.dumps(found)
    assert found["scope"] == "workspace" and "kept to this workspace" in found["scope_note"]
    stats = alice.call_tool("memory_stats", {}, str(remote.allowed))
    assert str(theirs) not in json.dumps(stats)
    assert stats["db_scope"]["shared"] and stats["db_scope"]["other_workspaces"] == []
    refused = _refusal(alice, "memory_query",
                       {"cypher_query": "MATCH (m:Memory) RETURN m.content", "read_only": True},
                       remote.allowed)
    assert refused.code == "permission_denied" and "whole database file" in refused.message
    alice.close()
    # the local user points alice's workspace at a file elsewhere: Status does not name it
    (remote.sibling / ".memnest").mkdir(mode=0o700, exist_ok=True)
    elsewhere = str(remote.sibling / ".memnest" / "elsewhere.lbug")
    local = _local(remote, monkeypatch)
    local.call_tool("memory_store", {"content": "Kept in a file of the local user's"},
                    str(remote.allowed), db_path=elsewhere)
    local.close()
    status = pb_grpc.MemnestStub(remote.channel("alice")).Status(pb.StatusRequest(), timeout=5)
    shown = {w.workspace: w.db_path for w in status.workspaces}
    assert shown[str(remote.allowed)] == "", shown
    assert all(w.startswith(str(remote.allowed)) for w in shown), shown


def test_the_output_folder_extends_to_a_remote_client_only_inside_its_folders(tmp_path):
    from memnest_daemon.core.errors import ToolError
    from memnest_daemon.server.tls import ClientPolicy
    from memnest_daemon.storage.safe_files import read_file, write_file
    from memnest_daemon.tools.registry import Confinement

    allowed, elsewhere = tmp_path / "allowed", tmp_path / "elsewhere"
    workspace = allowed / "app"
    for folder in (workspace, allowed / "out", elsewhere / "out"):
        folder.mkdir(parents=True)
    (allowed / "out" / "door").symlink_to(elsewhere / "out")
    rules = tmp_path / "clients.json"
    rules.write_text(json.dumps({"alice": [str(allowed)]}))
    os.chmod(rules, 0o600)
    policy = ClientPolicy(rules)
    alice = Confinement("alice", lambda p, r: policy.allows("alice", p, r),
                        lambda w: policy.allows_real("alice", w),
                        lambda: policy.allowed_folders("alice"))

    def write(path: Path, output_dir: Path, confined) -> str:
        return write_file(str(workspace), str(path), "", b"MN data", b"MN", "test file",
                          str(output_dir), confined)

    # the local user's output folder, outside alice's folders: hers only to be refused
    target = elsewhere / "out" / "a.txt"
    with pytest.raises(ToolError) as refused:
        write(target, elsewhere / "out", alice)
    assert refused.value.code == "permission_denied"
    assert "for a remote client only under" in refused.value.message
    assert "MEMNEST_OUTPUT_DIR" not in refused.value.message and not target.exists()
    assert write(target, elsewhere / "out", None) == str(target)
    # inside her folders it counts, but not through a link that leads out of them
    assert write(allowed / "out" / "b.txt", allowed / "out", alice) == \
        str(allowed / "out" / "b.txt")
    with pytest.raises(ToolError) as refused:
        write(allowed / "out" / "door" / "c.txt", allowed / "out", alice)
    assert refused.value.code == "permission_denied"
    assert not (elsewhere / "out" / "c.txt").exists()
    # reading: inside her folders, and the local user anywhere
    assert read_file(str(workspace), str(allowed / "out" / "b.txt"), 100, alice)[0] == \
        b"MN data"
    with pytest.raises(ToolError) as refused:
        read_file(str(workspace), str(target), 100, alice)
    assert refused.value.code == "not_found"
    assert read_file(str(workspace), str(target), 100, None)[0] == b"MN data"


def test_the_personal_tier_needs_its_grant(remote, monkeypatch):
    """The local user's personal memories never reach a remote client whose allow-list entry
    lacks "@personal"; with it, they are recalled as they are locally."""
    local = remote.daemon.client()
    mine = local.call_tool("memory_store", {"content": "My home address is 12 Elm Row and "
                                            "my bank is Northwind", "category": "preference",
                                            "scope": "user"}, str(remote.sibling))
    alice = remote_client(monkeypatch, remote.client_env())
    found = alice.call_tool("memory_search", {"query": "home address and bank"},
                            str(remote.allowed))
    assert mine["id"] not in [r["id"] for r in found["results"]]
    assert alice.call_tool("memory_get", {"ids": [mine["id"]]},
                           str(remote.allowed))["missing"] == [mine["id"]]
    for tool, arguments in (("memory_store", {"content": "alice's own preference about tabs",
                                              "scope": "user"}),
                            ("memory_delete", {"id": mine["id"]}),
                            ("memory_list", {"scope": "user"})):
        refused = _refusal(alice, tool, arguments, remote.allowed)
        assert refused.code == "permission_denied" and "@personal" in refused.message
    assert alice.call_tool("memory_stats", {}, str(remote.allowed))["personal"] is None

    clients = remote.tls / "clients.json"
    before = clients.read_text()
    rules = json.loads(before)
    rules["alice"] = [*rules["alice"], "@personal"]
    clients.write_text(json.dumps(rules))
    try:
        granted = alice.call_tool("memory_search", {"query": "home address and bank"},
                                  str(remote.allowed))
        hit = next(r for r in granted["results"] if r["id"] == mine["id"])
        assert hit["scope"] == "user"
    finally:
        clients.write_text(before)
        alice.close()
    local.call_tool("memory_delete", {"id": mine["id"]}, str(remote.sibling))
    local.close()


def test_a_search_of_every_workspace_names_none_a_remote_client_may_not_use(remote,
                                                                           monkeypatch):
    """Issue 55 (8): `workspaces: ["*"]` from a remote client searched its own folders and
    listed the daemon user's other projects in workspaces_not_searched."""
    local = _local(remote, monkeypatch)
    local.call_tool("memory_store", {"content": "The sibling project keeps its own notes"},
                    str(remote.sibling))
    local.close()
    alice = remote_client(monkeypatch, remote.client_env())
    try:
        found = alice.call_tool("memory_search", {"query": "notes", "workspaces": ["*"]},
                                str(remote.allowed))
    finally:
        alice.close()
    assert str(remote.sibling) not in json.dumps(found)
    assert all(w.startswith(str(remote.allowed)) for w in found.get("workspaces_searched", []))


def test_a_personal_export_in_an_allowed_folder_stays_personal(remote, monkeypatch):
    """Issue 55 (9): the local user exports the personal tier into a folder alice may use;
    alice, without "@personal", cannot import it into her workspace and read it there."""
    local = _local(remote, monkeypatch)
    mine = local.call_tool("memory_store", {"content": "My locker code is 4471 and my doctor is "
                                            "Dr Reyes", "category": "preference",
                                            "scope": "user"}, str(remote.sibling))
    exported = local.call_tool("memory_export", {"personal": True}, str(remote.sibling))
    target = remote.allowed / "backup-personal.json"
    shutil.copyfile(exported["path"], target)
    local.close()
    alice = remote_client(monkeypatch, remote.client_env())
    try:
        refused = _refusal(alice, "memory_import", {"path": str(target)}, remote.allowed)
        assert refused.code == "permission_denied" and "personal" in refused.message
        found = alice.call_tool("memory_search", {"query": "locker code doctor"},
                                str(remote.allowed))
        assert "4471" not in json.dumps(found)
    finally:
        alice.close()
        target.unlink()
        local = _local(remote, monkeypatch)
        local.call_tool("memory_delete", {"id": mine["id"]}, str(remote.sibling))
        local.close()
