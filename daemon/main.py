"""memnestd entry point: settings, logging, the single-instance check, model, serve, drain."""
import argparse
import logging
import logging.handlers
import os
import signal
import sys
from pathlib import Path

from memnest_proto import paths
from memnest_proto.version import VERSION

from .config import Settings

log = logging.getLogger("memnestd")


def _setup_logging(to_stderr: bool) -> Path:
    log_path = paths.log_file()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    fmt = logging.Formatter("%(asctime)s %(levelname)s [%(process)d %(threadName)s] "
                            "%(name)s: %(message)s")
    root = logging.getLogger()
    root.setLevel(os.environ.get("MEMNEST_LOG_LEVEL", "INFO").upper())
    file_handler = logging.handlers.RotatingFileHandler(log_path, maxBytes=5_000_000,
                                                        backupCount=3)
    file_handler.setFormatter(fmt)
    root.addHandler(file_handler)
    if to_stderr:
        stderr = logging.StreamHandler(sys.stderr)
        stderr.setFormatter(fmt)
        root.addHandler(stderr)
    return log_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memnestd", description=(
        "The memnest daemon: owns every workspace's memory database and the embedding "
        "model, and serves memnest-mcp and memnest-ctl over a Unix socket."))
    parser.add_argument("--socket", help="socket path (default: $MEMNEST_SOCKET or "
                        f"{paths.runtime_dir() / 'memnestd.sock'})")
    parser.add_argument("--spawned", action="store_true",
                        help="started on demand by a client: log only to the log file")
    parser.add_argument("--version", action="version", version=f"memnestd {VERSION}")
    args = parser.parse_args(argv)
    if args.socket:
        os.environ["MEMNEST_SOCKET"] = args.socket
    sock = paths.socket_path()

    # Imported here so that `memnestd --help` stays fast.
    from .server import AlreadyRunning, DaemonServer, InstanceLock, prepare_socket_dir

    settings = Settings.from_env()
    prepare_socket_dir(sock)
    try:
        lock = InstanceLock(sock)
    except AlreadyRunning:
        print(f"memnestd is already running on {sock}", file=sys.stderr)
        return 0
    log_path = _setup_logging(to_stderr=not args.spawned)
    log.info("memnestd %s starting (pid %d), socket %s", VERSION, os.getpid(), sock)

    stop_requested = []
    server_ref: list = []

    def on_signal(signum, _frame):
        log.info("received %s", signal.Signals(signum).name)
        stop_requested.append(signum)
        if server_ref:
            server_ref[0].request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    from .embedder import Embedder, ModelUnavailable
    from .service import MemnestService, Runtime
    from .housekeeping import start_housekeeping
    from .upkeep import Upkeep
    from .workspace import StoreRegistry

    try:
        embedder = Embedder(settings.embedding_model)
    except ModelUnavailable as exc:
        log.error("%s", exc)
        print(f"memnestd: {exc}", file=sys.stderr)
        lock.release()
        return 1
    stores = StoreRegistry(embedder.name, embedder.dim, settings.buffer_pool_mb,
                           settings.max_db_gb)
    runtime = Runtime(embedder, stores, str(sock), str(log_path))
    server = DaemonServer(sock, lambda stop: MemnestService(runtime, settings, stop))
    server_ref.append(server)
    if stop_requested:
        lock.release()
        return 0
    server.start()
    start_housekeeping(stores, Upkeep(stores, embedder, settings),
                       settings.idle_close_minutes * 60)
    try:
        server.wait()
    finally:
        server.stop()
        stores.close_all()
        lock.release()
        log.info("memnestd stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
