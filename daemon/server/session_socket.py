"""MCP sessions straight over the Unix socket, without gRPC (memnest_proto.contract's
SESSION_PREFACE says how the frames travel).

A local editor's every message used to cross the socket relay, gRPC's core and two more
threads in each direction before its session saw it; here the connection's own thread
writes the session's frames and a reader thread parses what the shim sends (session_pipe.py
does the rest, as for a gRPC Session stream). The relay (listener.py) has already checked
the peer's uid and read the preface when it hands a connection over.
"""
import logging
import socket
import threading
from collections.abc import Callable, Iterator

from google.protobuf.message import DecodeError
from memnest_proto import memnest_pb2 as pb
from memnest_proto.contract import FrameRefused, framed, read_framed

log = logging.getLogger(__name__)

MAX_SESSIONS = 512  # connections served at once; beyond, one is closed as it opens


class SessionSocketClosed(Exception):
    """The session refused its start (SocketContext.abort): the connection ends."""


class SocketContext:
    """What a Session stream's gRPC context gives session_pipe.py: the peer's name, a
    callback when the stream ends, and a way to refuse it."""

    def __init__(self, peer: str):
        self._peer = peer
        self._callbacks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self._ended = False

    def peer(self) -> str:
        return self._peer

    def add_callback(self, callback: Callable[[], None]) -> bool:
        with self._lock:
            if not self._ended:
                self._callbacks.append(callback)
                return True
        return False

    def abort(self, code, details: str):
        log.info("session from %s refused: %s", self._peer, details)
        raise SessionSocketClosed(details)

    def end(self) -> None:
        with self._lock:
            self._ended = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:
                log.exception("a session's end callback failed")


def read_frames(conn: socket.socket) -> Iterator[pb.SessionFrame]:
    """The SessionFrames a shim sends, until it stops writing, breaks a frame or goes."""
    reader = conn.makefile("rb")
    try:
        while (body := read_framed(reader)) is not None:
            try:
                yield pb.SessionFrame.FromString(body)
            except DecodeError:
                log.info("session frame refused: not a SessionFrame")
                return
    except FrameRefused as exc:
        log.info("session frame refused: %s", exc)
    except OSError:
        return
    finally:
        reader.close()


def write_frame(conn: socket.socket, frame: pb.SessionFrame) -> None:
    conn.sendall(framed(frame.SerializeToString()))


class SessionSockets:
    """Serves the connections that asked for a session (in the thread that hands each
    one over), at most MAX_SESSIONS at once."""

    def __init__(self, serve: Callable):
        self._serve = serve  # SessionHub.serve(request_iterator, context, identity)
        self._lock = threading.Lock()
        self._open = 0
        self._count = 0

    def serve(self, conn: socket.socket) -> None:
        with self._lock:
            full = self._open >= MAX_SESSIONS
            if not full:
                self._open += 1
                self._count += 1
            number = self._count
        try:
            if full:  # not `closing`, which a shim answers by coming back at once
                log.warning("refused an MCP session: %d are open already", MAX_SESSIONS)
                return
            self._serve_one(conn, f"session-{number}")
        except OSError:
            pass
        finally:
            if not full:
                with self._lock:
                    self._open -= 1
            _close(conn)

    def _serve_one(self, conn: socket.socket, peer: str) -> None:
        context = SocketContext(peer)
        frames = self._serve(read_frames(conn), context, None)
        try:
            for frame in frames:
                write_frame(conn, frame)
        except SessionSocketClosed:
            pass
        finally:
            context.end()  # before close(): the session stops waiting on the writer
            frames.close()


def _close(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    conn.close()
