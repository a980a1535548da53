"""memnestd entry point: settings, logging, the single-instance check, model, serve, drain."""
import argparse
import logging
import logging.handlers
import os
import queue
import signal
import stat
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memnest_proto import paths
from memnest_proto.version import VERSION

from ..core.config import IGNORED_SETTINGS, Settings, embedding_dim_refusal

if TYPE_CHECKING:
    from .listener import DaemonServer

log = logging.getLogger("memnestd")
GIL_SWITCH_SECONDS = 0.0005


class _StderrCopy(logging.Handler):
    """The log's copy on stderr (the journal, a terminal). The file has every record; this copy
    must never hold a call up: a pipe nobody drains fills up and would block whichever thread
    logs. Lines go through a bounded queue to a writer thread and are dropped when it is full."""

    def __init__(self, stream, max_lines: int = 1000):
        super().__init__()
        self._lines: queue.Queue[str] = queue.Queue(maxsize=max_lines)
        self._stream = stream
        threading.Thread(target=self._write, name="stderr-log", daemon=True).start()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._lines.put_nowait(self.format(record) + "\n")
        except queue.Full:
            pass
        except Exception:  # noqa: BLE001 - logging must not fail the caller
            self.handleError(record)

    def _write(self) -> None:
        while True:
            line = self._lines.get()
            try:
                self._stream.write(line)
                self._stream.flush()
            except (OSError, ValueError):
                pass

    def settle(self, timeout: float = 1.0) -> None:
        """At exit: give queued lines a moment to reach the stream, never more."""
        deadline = time.monotonic() + timeout
        while not self._lines.empty() and time.monotonic() < deadline:
            time.sleep(0.01)


def _setup_logging(to_stderr: bool) -> Path:
    log_path = paths.log_file()
    _check_log_file(log_path)
    if not log_path.parent.exists():
        log_path.parent.mkdir(mode=0o700, parents=True)
    fmt = logging.Formatter("%(asctime)s %(levelname)s [%(process)d %(threadName)s] "
                            "%(name)s: %(message)s")
    root = logging.getLogger()
    root.setLevel(os.environ.get("MEMNEST_LOG_LEVEL", "INFO").upper())
    file_handler = logging.handlers.RotatingFileHandler(log_path, maxBytes=5_000_000,
                                                        backupCount=3)
    file_handler.setFormatter(fmt)
    root.addHandler(file_handler)
    if to_stderr:
        stderr = _StderrCopy(sys.stderr)
        stderr.setFormatter(fmt)
        root.addHandler(stderr)
    return log_path


def _use_sealing_key(settings: Settings) -> None:
    """The user's key (core/sealing.py), kept in memnest's own folder (the personal tier's,
    MEMNEST_USER_DIR). Without it, what this daemon seals holds only until it stops."""
    from ..core import sealing
    from ..core.errors import ToolError
    from ..storage.user_key import KeyRefused, load_or_create
    from ..store.resolution import personal_folder
    try:
        sealing.set_key(load_or_create(personal_folder(settings.user_dir)))
    except (KeyRefused, ToolError, OSError) as exc:
        log.error("no sealing key: %s; followed sources set before this start are not "
                  "trusted after it", getattr(exc, "message", None) or exc)


def _check_log_file(path: Path) -> None:
    """The log is appended to by name: a link there (or a file of another user's, or one
    with another hard link) would have the daemon write elsewhere. Refused, with the fix."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode) or \
            info.st_uid != os.geteuid() or info.st_nlink > 1:
        raise SystemExit(f"memnestd: {path} is not a log file of its own (a link, another "
                         "user's, not a regular file, or hard-linked elsewhere); remove it or "
                         "set MEMNEST_LOG_FILE to another path")


def main(argv: list[str] | None = None) -> int:
    # Every call crosses Python threads (relay pumps, gRPC, the worker) that wait for the GIL;
    # handing it on sooner than the default 5 ms speeds calls up
    # (bench/RESULTS.md#search-profiles).
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    args = _arguments(argv)
    if args.socket:
        os.environ["MEMNEST_SOCKET"] = args.socket

    from .. import tune_malloc
    tune_malloc()
    # Every file and folder the daemon or the engine creates is private to this user: memory
    # texts, logs and exports are readable by nobody else (group and others get nothing).
    os.umask(0o077)
    # Imported here so that `memnestd --help` stays fast.
    from .listener import AlreadyRunning, InstanceLock, inherited_listener, prepare_socket_dir
    from .tls import config_from
    settings = Settings.from_env()
    # exits when its files are unsafe
    tls = config_from(args.listen_tls, args.tls_dir, settings.tls)

    listener = inherited_listener()  # systemd socket activation
    sock = _address(listener)
    idle_exit_minutes = _idle_exit_minutes()
    prepare_socket_dir(sock)
    try:
        lock = InstanceLock(sock)
    except AlreadyRunning:
        print(f"memnestd is already running on {sock}", file=sys.stderr)
        return 0
    try:
        return _run(args, settings, listener, sock, idle_exit_minutes, tls)
    finally:
        lock.release()


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="memnestd", description=(
        "The memnest daemon: owns every workspace's memory database and the embedding "
        "model, and serves memnest-mcp and memnest-ctl over a Unix socket."))
    parser.add_argument("--socket", help="socket path (default: $MEMNEST_SOCKET or "
                        f"{paths.runtime_dir() / 'memnestd.sock'})")
    parser.add_argument("--spawned", action="store_true",
                        help="started on demand by a client: log only to the log file, exit "
                             "after MEMNEST_IDLE_EXIT_MINUTES (default 30) without clients")
    parser.add_argument("--service", action="store_true",
                        help="run by a service manager (systemd, launchd): never exit when "
                             "idle, and after an upgrade request exit with status 75 "
                             "so that the manager starts the new version")
    parser.add_argument("--listen-tls", metavar="HOST:PORT",
                        help="also serve on TCP, mutual TLS only (default: "
                             "$MEMNEST_TLS_LISTEN; the certificate, key and CA from "
                             "$MEMNEST_TLS_CERT, $MEMNEST_TLS_KEY, $MEMNEST_TLS_CA or --tls-dir; "
                             "which client may use which workspace from $MEMNEST_TLS_CLIENTS)")
    parser.add_argument("--tls-dir", metavar="DIR",
                        help="folder holding server.crt, server.key, ca.crt and clients.json "
                             "(what `memnest-ctl tls init` writes; default: $MEMNEST_TLS_DIR)")
    parser.add_argument("--version", action="version", version=f"memnestd {VERSION}")
    return parser.parse_args(argv)


def _address(listener) -> Path:
    """The socket clients reach us on: the configured path, or the one a service manager
    created and handed over."""
    from .listener import listener_path

    sock = paths.socket_path()
    inherited = listener_path(listener) if listener is not None else None
    if inherited is not None and inherited != sock:
        print(f"memnestd: serving the inherited socket {inherited} (not {sock})",
              file=sys.stderr)
        os.environ["MEMNEST_SOCKET"] = str(inherited)
        return inherited
    return sock


class _StopRequests:
    """SIGTERM and SIGINT: ask the server to drain, or note it when it has not started."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.server: DaemonServer | None = None
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum, _frame) -> None:
        log.info("received %s", signal.Signals(signum).name)
        self.received.append(signum)
        if self.server is not None:
            self.server.request_stop()


def _run(args: argparse.Namespace, settings: Settings, listener, sock: Path,
         idle_exit_minutes: float, tls=None) -> int:
    """Everything after the instance lock is ours: load the model, serve until asked to stop,
    drain. The exit status."""
    from .listener import AlreadyRunning, DaemonServer, something_listens

    log_path = _start_log(args, listener, sock)
    stops = _StopRequests()
    if listener is None and sock.exists() and something_listens(sock):
        # Not a daemon of ours (we hold the lock): most likely a systemd socket unit, which
        # starts the service-managed daemon on this very connection attempt.
        print(f"memnestd: {sock} is already served by another listener (a systemd socket "
              "unit?)", file=sys.stderr)
        return 0
    embedder = _load_model(settings)
    if embedder is None:
        return 1
    from ..store.registry import StoreRegistry
    from ..team.outgoing import open_team
    from .servicer import MemnestService, Runtime

    _use_sealing_key(settings)
    stores = StoreRegistry(embedder.name, embedder.dim, settings.buffer_pool_mb,
                           settings.max_db_gb, settings.db_threads, embedder.embed,
                           settings.max_open_databases, open_team=open_team,
                           personal_dir=settings.user_dir)
    runtime = Runtime(embedder, stores, str(sock), str(log_path))
    policy = tls.clients if tls is not None else None
    server = DaemonServer(sock, lambda stop: MemnestService(runtime, settings, stop, policy),
                          listener=listener, tls=tls)
    server.managed = args.service
    stops.server = server
    if stops.received:
        return 0
    try:
        server.start()
    except AlreadyRunning as exc:
        log.info("not starting: %s", exc)
        print(f"memnestd: {exc}", file=sys.stderr)
        return 0
    try:
        _serve(server, stores, embedder, settings,
               idle_exit_minutes * 60 if args.spawned else 0, sock)
    finally:
        _drain(server, stores)
    return server.exit_code


def _start_log(args: argparse.Namespace, listener, sock: Path) -> Path:
    """Set up logging and say how this daemon was started; the log file's path."""
    # Under systemd stderr is the journal; under launchd it is a file beside our own log.
    to_stderr = not args.spawned and (not args.service or bool(os.environ.get("JOURNAL_STREAM")))
    log_path = _setup_logging(to_stderr=to_stderr)
    log.info("memnestd %s starting (pid %d), socket %s%s%s", VERSION, os.getpid(), sock,
             " (inherited)" if listener is not None else "",
             ", run by a service manager" if args.service else
             ", on demand" if args.spawned else "")
    return log_path


def _load_model(settings: Settings):
    """The embedding model, or None once the reason it cannot serve is logged and printed."""
    from ..model.embedder import Embedder, ModelUnavailable

    try:
        embedder = Embedder(settings.embedding_model, settings.embed_threads or None)
    except ModelUnavailable as exc:
        log.error("%s", exc)
        print(f"memnestd: {exc}", file=sys.stderr)
        return None
    refusal = embedding_dim_refusal(embedder.dim)
    if refusal:
        log.error("%s", refusal)
        print(f"memnestd: {refusal}", file=sys.stderr)
        return None
    for name, why in IGNORED_SETTINGS.items():
        if os.environ.get(name, "").strip():
            log.warning("%s is ignored: %s", name, why)
    return embedder


def _drain(server, stores) -> None:
    """Stop serving, close every database, and say why the daemon stopped."""
    _sd_notify("STOPPING=1")
    server.stop()
    stores.close_all()
    log.info("memnestd stopped%s", f" (exit status {server.exit_code}: the service "
             "manager starts the new version)" if server.exit_code else "")
    for handler in logging.getLogger().handlers:
        if isinstance(handler, _StderrCopy):
            handler.settle()


def _warm_mcp_sdk(server, quiet_s: float = 1.0) -> None:
    """Import the MCP SDK (about a second of CPU) before the first editor connects, but once
    no call has run for `quiet_s`: not over the first workspace's open, which it would slow
    down as much. A session that comes first imports it itself."""
    while server.activity.idle_seconds() < quiet_s and not server.stopping():
        time.sleep(0.2)
    if not server.stopping():
        server.service.sessions.tools()


def _serve(server, stores, embedder, settings: Settings, idle_exit_seconds: float,
           sock: Path) -> None:
    """Ready: start the background work and wait until the server is asked to stop."""
    from ..curation.conflicts import neighbour_floor
    from .housekeeping import start_housekeeping
    from .listener import connected_clients
    from .upkeep import Upkeep

    _sd_notify("READY=1")
    threading.Thread(target=_warm_mcp_sdk, args=(server,), name="mcp-warmup",
                     daemon=True).start()
    start_housekeeping(stores, Upkeep(stores, embedder, settings),
                       settings.idle_close_minutes * 60, neighbour_floor(settings))
    if idle_exit_seconds > 0:
        _start_idle_exit(server, sock, idle_exit_seconds, connected_clients)
    server.wait()


def _idle_exit_minutes() -> float:
    raw = os.environ.get("MEMNEST_IDLE_EXIT_MINUTES", "").strip()
    try:
        return float(raw) if raw else 30.0
    except ValueError:
        raise SystemExit(f"MEMNEST_IDLE_EXIT_MINUTES={raw!r} is not a number") from None


def _start_idle_exit(server, sock: Path, idle_seconds: float, count_clients) -> None:
    """An on-demand daemon leaves when nobody has been connected or calling for a while; the
    next client starts it again. A service-managed daemon never does this."""
    def loop():
        alone_since = time.monotonic()
        while not server.stopping():
            time.sleep(min(30.0, max(0.2, idle_seconds / 5)))
            clients = count_clients(sock)  # None where the platform cannot tell
            now = time.monotonic()
            if clients:
                alone_since = now
                continue
            if server.activity.idle_seconds() < idle_seconds:
                continue
            if clients is not None and now - alone_since < idle_seconds:
                continue
            log.info("no clients and no calls for %g minutes: exiting (the next client "
                     "starts memnestd again)", idle_seconds / 60)
            server.request_stop()
            return

    threading.Thread(target=loop, name="idle-exit", daemon=True).start()


def _sd_notify(state: str) -> None:
    """Tell systemd (Type=notify) that we are ready or stopping; a no-op elsewhere."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    import socket
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            s.connect(address)
            s.sendall(state.encode())
    except OSError as exc:
        log.warning("could not notify systemd (%s): %s", state, exc)


if __name__ == "__main__":
    sys.exit(main())
