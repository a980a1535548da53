"""The daemon's socket: one instance per socket path, private to its user, drained on exit.

The socket is either created here or inherited from a service manager (systemd socket
activation: LISTEN_PID / LISTEN_FDS, first descriptor 3). gRPC's Python server cannot listen
on a descriptor it did not create, so with an inherited socket the daemon accepts every
connection on that descriptor itself and relays its bytes to the gRPC server, which listens on
a private socket in the same 0700 folder. The public socket is never unlinked or replaced: it
belongs to the service manager, which keeps it open (and queues new connections) while the
daemon restarts.

The daemon does the same with a socket it creates itself: gRPC's Python server cannot show a
servicer the peer's credentials of a Unix connection, so every connection is accepted here
first, its peer uid read from the kernel (SO_PEERCRED on Linux, LOCAL_PEERCRED, which is what
getpeereid(3) reads, on macOS) and any uid but the daemon's own refused and logged before a
single byte reaches gRPC.

The relay also names each connection it opens to the gRPC server, so that gRPC can tell the
clients apart: calls are scheduled in turns between connections (fair_calls.py), and a client
flooding the daemon only delays itself.
"""
import errno
import fcntl
import logging
import os
import secrets
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import grpc
from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_proto.contract import MAX_MESSAGE_BYTES, SESSION_PREFACE, SOCKET_ACTIVATION_VARS
from memnest_proto.paths import grpc_target

from .fair_calls import FairExecutor
from .session_socket import SessionSockets

log = logging.getLogger(__name__)

DRAIN_SECONDS = 30.0
MAX_CALLS_ACCEPTED = 4096
SD_LISTEN_FDS_START = 3
MAX_UNIX_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS
PREFACE_SECONDS = 30.0


class AlreadyRunning(Exception):
    pass


def prepare_socket_dir(sock: Path) -> None:
    """The folder holding the socket is the access boundary: it must be ours and 0700."""
    folder = sock.parent
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
    info = folder.stat()
    if info.st_uid != os.getuid():
        raise SystemExit(f"refusing to use {folder}: it belongs to uid {info.st_uid}, not to "
                         f"you (uid {os.getuid()}); set MEMNEST_SOCKET to a path in a folder "
                         "of your own")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise SystemExit(f"refusing to use {folder}: its permissions are "
                         f"{stat.S_IMODE(info.st_mode):o}, so other users could reach the "
                         f"socket; run `chmod 700 {folder}` or choose another MEMNEST_SOCKET")


class InstanceLock:
    """An flock beside the socket: held for the daemon's whole life, so a second daemon
    for the same socket knows at once that it is not needed, and a socket file left
    without its lock is known to be stale."""

    def __init__(self, sock: Path):
        self.path = sock.with_name(sock.name + ".lock")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise AlreadyRunning(str(sock)) from None
            raise
        os.ftruncate(self._fd, 0)
        os.write(self._fd, f"{os.getpid()}\n".encode())

    def release(self) -> None:
        os.close(self._fd)


# -- socket activation ---------------------------------------------------------------------------

def inherited_listener() -> socket.socket | None:
    """The listening socket a service manager passed us, as sd_listen_fds(3) defines it:
    LISTEN_PID is our pid and LISTEN_FDS counts descriptors from 3. The variables are removed
    so that nothing this process starts believes the socket is meant for it."""
    pid, count = os.environ.get("LISTEN_PID"), os.environ.get("LISTEN_FDS")
    for name in SOCKET_ACTIVATION_VARS:
        os.environ.pop(name, None)
    if not pid or not count:
        return None
    try:
        if int(pid) != os.getpid():
            log.info("ignoring LISTEN_FDS meant for pid %s", pid)
            return None
        n = int(count)
    except ValueError:
        log.warning("ignoring malformed LISTEN_PID=%r LISTEN_FDS=%r", pid, count)
        return None
    if n < 1:
        return None
    if n > 1:
        log.warning("%d sockets inherited; using the first (fd %d)", n, SD_LISTEN_FDS_START)
    fd = SD_LISTEN_FDS_START
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise SystemExit(f"memnestd: LISTEN_FDS={n}, but the inherited fd {fd} is not a Unix "
                         f"stream socket ({exc.strerror})") from None
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise SystemExit(f"memnestd: the inherited fd {fd} is not a Unix stream socket; the "
                         "socket unit "
                         "must use ListenStream= with a path")
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        sock.detach()
        raise SystemExit(f"memnestd: the inherited fd {fd} is not listening (Accept=yes is not "
                         "supported: use Accept=no)")
    os.set_inheritable(fd, False)
    return sock


def listener_path(sock: socket.socket) -> Path | None:
    name = sock.getsockname()
    if isinstance(name, bytes):
        name = name.decode(errors="replace")
    if not name or name.startswith("\0"):
        return None
    return Path(name)


def something_listens(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
        return True
    except OSError:
        return False
    finally:
        probe.close()


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a connected Unix socket, as the kernel
    recorded it at connect time, or None when this platform does not say."""
    if hasattr(socket, "SO_PEERCRED"):  # Linux: struct ucred {pid, uid, gid}
        raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return struct.unpack("3i", raw)[1]
    if sys.platform == "darwin":  # getpeereid(3): LOCAL_PEERCRED at SOL_LOCAL (0)
        local_peercred, xucred = 0x001, "IiH16I"  # cr_version, cr_uid, cr_ngroups, groups
        raw = conn.getsockopt(0, local_peercred, struct.calcsize(xucred))
        return struct.unpack(xucred, raw[:struct.calcsize(xucred)])[1]
    return None


class _Relay:
    """Accepts connections on the public socket, refuses any peer whose uid is not ours, and
    copies bytes both ways between each accepted one and the gRPC server's private socket."""

    CHUNK = 256 * 1024

    def __init__(self, listener: socket.socket, inner: Path,
                 sessions: SessionSockets | None = None):
        self.listener, self.inner = listener, inner
        self.sessions = sessions
        self._closing = threading.Event()
        self._count = 0
        self._thread = threading.Thread(target=self._accept_loop, name="activation-accept",
                                        daemon=True)

    def start(self) -> None:
        self.listener.settimeout(0.25)
        self._thread.start()

    def stop_accepting(self) -> None:
        """New connections stay queued in the service manager's socket for the next daemon."""
        self._closing.set()
        self._thread.join(timeout=5)
        # Our copy only: the service manager keeps the socket open and listening.
        self.listener.close()

    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._closing.is_set():
                    return
                log.warning("accept on the inherited socket failed: %s", exc)
                time.sleep(0.1)
                continue
            conn.setblocking(True)
            if not self._peer_allowed(conn):
                conn.close()
                continue
            threading.Thread(target=self._route, args=(conn,), name="relay-in",
                             daemon=True).start()

    def _route(self, conn: socket.socket) -> None:
        """An MCP session without gRPC (SESSION_PREFACE) is served in this thread; any other
        connection is gRPC's, relayed with the bytes read to tell them apart."""
        try:
            head = _preface(conn, SESSION_PREFACE if self.sessions is not None else b"")
        except OSError:
            conn.close()
            return
        if head == SESSION_PREFACE and self.sessions is not None:
            self.sessions.serve(conn)
            return
        try:
            backend = self._connect_backend()
            backend.sendall(head)
        except OSError as exc:
            log.warning("could not reach the gRPC server at %s: %s", self.inner, exc)
            conn.close()
            return
        pair = _Pair(conn, backend)
        threading.Thread(target=pair.pump, args=(backend, conn), name="relay-out",
                         daemon=True).start()
        pair.pump(conn, backend)

    def _connect_backend(self) -> socket.socket:
        """A connection to the gRPC server under a name of its own, which gRPC reports as
        the peer of its calls: the fair executor (fair_calls.py) takes turns between them."""
        self._count += 1
        name = f"memnest-{os.getpid()}-{self._count}-{secrets.token_hex(4)}"
        backend = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        planted = None
        try:
            if sys.platform.startswith("linux"):
                backend.bind("\0" + name)  # abstract: nothing to clean up
            elif len(str(self.inner.parent / name)) <= MAX_UNIX_PATH:
                planted = self.inner.parent / name  # in our 0700 folder
                backend.bind(str(planted))
        except OSError as exc:  # unnamed, its calls share the queue of other unnamed ones
            log.debug("relay connection left unnamed: %s", exc)
        try:
            backend.connect(str(self.inner))
        except OSError:
            backend.close()
            raise
        finally:
            if planted is not None:
                try:
                    planted.unlink()  # the name stays on the connection
                except OSError:
                    pass
        return backend

    @staticmethod
    def _peer_allowed(conn: socket.socket) -> bool:
        try:
            uid = peer_uid(conn)
        except OSError as exc:
            log.warning("refused a connection whose peer credentials could not be read: %s",
                        exc)
            return False
        if uid is None:
            return True  # a platform without peer credentials: the 0700 folder is the boundary
        if uid != os.getuid():
            log.warning("refused a connection from uid %d: only uid %d may use this daemon",
                        uid, os.getuid())
            return False
        return True


def _preface(conn: socket.socket, preface: bytes) -> bytes:
    """The connection's first bytes, read while they may still be `preface` (all of it at
    most): a gRPC client's differ at the first byte. A client silent for PREFACE_SECONDS
    is dropped."""
    head = b""
    conn.settimeout(PREFACE_SECONDS)
    try:
        while len(head) < len(preface) and preface.startswith(head):
            chunk = conn.recv(len(preface) - len(head))
            if not chunk:
                break
            head += chunk
    finally:
        conn.settimeout(None)
    return head


class _Pair:
    def __init__(self, a: socket.socket, b: socket.socket):
        self.a, self.b = a, b
        self._open = 2
        self._lock = threading.Lock()

    def pump(self, src: socket.socket, dst: socket.socket) -> None:
        buf = bytearray(_Relay.CHUNK)
        view = memoryview(buf)
        try:
            while True:
                n = src.recv_into(buf)
                if n == 0:
                    break
                dst.sendall(view[:n])
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            with self._lock:
                self._open -= 1
                done = self._open == 0
            if done:
                self.a.close()
                self.b.close()


# -- activity ------------------------------------------------------------------------------------

class Activity(grpc.ServerInterceptor):
    """Counts calls in flight and remembers when the last one ended (every RPC, not only
    tools), for the idle exit of on-demand daemons."""

    def __init__(self):
        self._lock = threading.Lock()
        self.in_flight = 0
        self.last_activity = time.monotonic()

    def _begin(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.last_activity = time.monotonic()

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self.last_activity = time.monotonic()

    def idle_seconds(self) -> float:
        with self._lock:
            return 0.0 if self.in_flight else time.monotonic() - self.last_activity

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        if handler.unary_unary:
            inner = handler.unary_unary

            def unary(request, context):
                self._begin()
                try:
                    return inner(request, context)
                finally:
                    self._end()
            return grpc.unary_unary_rpc_method_handler(
                unary, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        if handler.unary_stream:
            inner_stream = handler.unary_stream

            def stream(request, context):
                self._begin()
                try:
                    yield from inner_stream(request, context)
                finally:
                    self._end()
            return grpc.unary_stream_rpc_method_handler(
                stream, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
        return handler


def connected_clients(sock: Path) -> int | None:
    """How many connections to our socket are open right now, or None when this platform
    does not say. On Linux an accepted Unix socket carries the listener's path, so
    /proc/net/unix lists one connected (state 03) entry per client."""
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="replace") as f:
            next(f)
            # gRPC binds "unix:///x" as "///x": compare normalised paths.
            target = os.path.normpath(str(sock))
            count = 0
            for line in f:
                fields = line.split(None, 7)
                if len(fields) == 8 and fields[5] == "03" and \
                        os.path.normpath(fields[7].rstrip("\n")) == target:
                    count += 1
            return count
    except (OSError, StopIteration):
        pass
    import psutil
    try:
        target = os.path.normpath(str(sock))
        mine = [c for c in psutil.Process().net_connections(kind="unix")
                if c.laddr and os.path.normpath(c.laddr) == target]
    except (OSError, psutil.Error):
        return None
    return max(0, len(mine) - 1)  # minus the listening socket


# -- the server ----------------------------------------------------------------------------------

class DaemonServer:
    def __init__(self, sock: Path, servicer_factory, workers: int = 16,
                 listener: socket.socket | None = None, tls=None):
        self.sock = sock
        self.listener = listener
        self.tls = tls  # tls.TlsConfig: also listen on TCP, mutual TLS only
        self.activity = Activity()
        self.exit_code = 0
        self.managed = False  # run by a service manager that restarts it after an upgrade
        self._stopped = threading.Event()
        self._relay: _Relay | None = None
        self._own_public: socket.socket | None = None
        self._inner: Path | None = None
        self._inner_dir: str | None = None
        executor = FairExecutor(max_workers=workers, thread_name_prefix="call")
        self._server = grpc.server(
            executor,
            interceptors=[self.activity],
            # Beyond this many calls accepted and not finished, gRPC answers RESOURCE_EXHAUSTED
            # at once: a runaway client cannot queue requests until memory runs out.
            maximum_concurrent_rpcs=MAX_CALLS_ACCEPTED,
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.so_reuseport", 0)])
        self.service = servicer_factory(self.request_stop)
        self.service.attach_executor(executor)
        pb_grpc.add_MemnestServicer_to_server(self.service, self._server)

    @property
    def activated(self) -> bool:
        return self.listener is not None

    def start(self) -> None:
        if self.listener is not None:
            self._start_activated()
            return
        if self.sock.exists() or self.sock.is_symlink():
            if something_listens(self.sock):
                # We hold the instance lock, so this is not a daemon of ours: most likely a
                # systemd socket unit that will start the service-managed daemon.
                raise AlreadyRunning(f"{self.sock} is already served by another listener "
                                     "(a systemd socket unit?)")
            # We hold the instance lock, so whatever is there was left by a dead daemon.
            log.warning("removing stale socket %s left by a previous daemon", self.sock)
            self.sock.unlink()
        self._remove_stale_inner_sockets()
        public = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket is created 0600, never briefly wider
        try:
            public.bind(str(self.sock))
        except OSError as exc:
            public.close()
            raise SystemExit(f"could not listen on {self.sock}: {exc.strerror}") from None
        finally:
            os.umask(old_umask)
        os.chmod(self.sock, 0o600)
        public.listen(128)
        self._own_public = public
        self._serve_through_relay(public)
        log.info("listening on %s", self.sock)

    def _remove_stale_inner_sockets(self) -> None:
        """Private gRPC sockets left in our folder by a daemon that was killed (we hold the
        instance lock, so none of them is served)."""
        for path in self.sock.parent.glob(".memnestd-*.grpc"):
            try:
                pid = int(path.name.split("-", 1)[1].split(".", 1)[0])
                os.kill(pid, 0)
            except (ValueError, ProcessLookupError):
                try:
                    path.unlink()
                except OSError:
                    pass
            except PermissionError:
                pass

    def _bind(self, path: Path) -> None:
        old_umask = os.umask(0o177)  # the socket is created 0600, never briefly wider
        try:
            bound = self._server.add_insecure_port(grpc_target(path))
        finally:
            os.umask(old_umask)
        if bound == 0:
            raise SystemExit(f"could not listen on {path}")
        os.chmod(path, 0o600)

    def _bind_tls(self) -> None:
        """The TCP port: TLS with a client certificate from our CA, never plain TCP."""
        from .tls import server_credentials

        assert self.tls is not None
        try:
            bound = self._server.add_secure_port(self.tls.listen, server_credentials(self.tls))
        except RuntimeError as exc:
            raise SystemExit(f"memnestd: could not listen on {self.tls.listen} (is the port in "
                             f"use, or the address not this machine's?): {exc}") from None
        if bound == 0:
            raise SystemExit(f"memnestd: could not listen on {self.tls.listen} (in use, or not "
                             "an address of this machine?)")
        log.info("listening on %s (mutual TLS, certificate %s, allow-list %s)",
                 self.tls.listen, self.tls.cert_path, self.tls.clients.path)

    def _remove_sockets(self) -> None:
        for path in (self._inner, self.sock if self._own_public is not None else None):
            if path is not None:
                try:
                    path.unlink()
                except OSError:
                    pass
        if self._own_public is not None:
            self._own_public.close()

    def _start_activated(self) -> None:
        assert self.listener is not None
        self._serve_through_relay(self.listener)
        log.info("serving the inherited socket %s (socket activation)", self.sock)

    def _serve_through_relay(self, listener: socket.socket) -> None:
        inner = self.sock.parent / f".memnestd-{os.getpid()}.grpc"
        if len(str(inner)) > MAX_UNIX_PATH:
            self._inner_dir = tempfile.mkdtemp(prefix="memnestd-")  # created 0700
            inner = Path(self._inner_dir) / "grpc.sock"
        if inner.exists():
            inner.unlink()
        self._inner = inner
        self._bind(inner)
        if self.tls is not None:
            try:
                self._bind_tls()
            except SystemExit:
                self._remove_sockets()  # nothing was served: leave no socket behind
                raise
        self._server.start()
        serve = getattr(self.service, "serve_session", None)  # None: a daemon without sessions
        self._relay = _Relay(listener, inner, SessionSockets(serve) if serve else None)
        self._relay.start()

    def request_stop(self, upgrade: bool = False) -> bool:
        """Ask the main thread to drain and exit. Returns True when a service manager will
        start the next daemon (the caller should wait for it rather than start one)."""
        restarting = False
        if upgrade and self.managed:
            self.exit_code = EXIT_RESTART
            restarting = True
        elif upgrade and self.activated:
            restarting = True  # the socket unit starts the next daemon on the next connection
        self._stopped.set()
        return restarting

    def wait(self) -> None:
        # Wake up now and then: a signal delivered to another thread only flags its Python
        # handler, which runs when the main thread next executes bytecode.
        while not self._stopped.wait(timeout=0.5):
            pass

    def stopping(self) -> bool:
        return self._stopped.is_set()

    def stop(self) -> None:
        """Refuse new calls, let calls in flight finish (bounded), remove the socket."""
        log.info("draining calls in flight (up to %.0fs)", DRAIN_SECONDS)
        if self._relay is not None:
            self._relay.stop_accepting()
        # MCP sessions last as long as their editors: they end once what they read is answered
        self.service.drain_sessions("memnestd is stopping", DRAIN_SECONDS)
        self._server.stop(grace=DRAIN_SECONDS).wait()
        if self._inner is not None:
            for path in (self._inner,):
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
            if self._inner_dir:
                try:
                    os.rmdir(self._inner_dir)
                except OSError:
                    pass
            if self._own_public is None:
                return  # the public socket belongs to the service manager
        try:
            self.sock.unlink()
        except FileNotFoundError:
            pass


# Exit status that asks a service manager to start the daemon again (after an upgrade):
# EX_TEMPFAIL. The systemd unit lists it in SuccessExitStatus= and RestartForceExitStatus=;
# launchd's KeepAlive restarts on any unsuccessful exit.
EXIT_RESTART = 75
