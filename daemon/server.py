"""The daemon's socket: one instance per socket path, private to its user, drained on exit."""
import errno
import fcntl
import logging
import os
import stat
import threading
from concurrent import futures
from pathlib import Path

import grpc

from memnest_proto import memnest_pb2_grpc as pb_grpc
from memnest_proto.paths import grpc_target

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
DRAIN_SECONDS = 30.0


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


class DaemonServer:
    def __init__(self, sock: Path, servicer_factory, workers: int = 16):
        self.sock = sock
        self._stopped = threading.Event()
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="call"),
            options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
                     ("grpc.so_reuseport", 0)])
        pb_grpc.add_MemnestServicer_to_server(servicer_factory(self.request_stop), self._server)

    def start(self) -> None:
        if self.sock.exists() or self.sock.is_symlink():
            # We hold the instance lock, so whatever is there was left by a dead daemon.
            log.warning("removing stale socket %s left by a previous daemon", self.sock)
            self.sock.unlink()
        old_umask = os.umask(0o177)  # the socket is created 0600, never briefly wider
        try:
            bound = self._server.add_insecure_port(grpc_target(self.sock))
        finally:
            os.umask(old_umask)
        if bound == 0:
            raise SystemExit(f"could not listen on {self.sock}")
        os.chmod(self.sock, 0o600)
        self._server.start()
        log.info("listening on %s", self.sock)

    def request_stop(self) -> None:
        self._stopped.set()

    def wait(self) -> None:
        self._stopped.wait()

    def stop(self) -> None:
        """Refuse new calls, let calls in flight finish (bounded), remove the socket."""
        log.info("draining calls in flight (up to %.0fs)", DRAIN_SECONDS)
        self._server.stop(grace=DRAIN_SECONDS).wait()
        try:
            self.sock.unlink()
        except FileNotFoundError:
            pass
