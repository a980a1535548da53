"""Calls are run in turns between clients, not in arrival order.

gRPC's Python server hands every accepted call to one executor. A plain thread pool runs them
first come, first served, so a client that fires 1,000 calls without waiting makes every other
editor window wait behind all of them. This executor keeps one queue per client connection and
lets the workers take one call from each client in turn: a call from a quiet client waits for at
most the calls already running, however long the busy client's queue is.

The client is the connection the call came on. The relay in server.py gives each accepted
connection its own name on the way to the gRPC server, which gRPC reports as the call's peer;
calls whose peer has no name (or whose peer cannot be read) share one queue.

An MCP session (the Session stream) lasts as long as its editor window and mostly waits, so
it does not take one of the workers: it gets a thread of its own, and the tool calls it makes
come back through submit_for() under the session's connection, taking turns like any other.
"""
import threading
from collections import OrderedDict, deque
from concurrent import futures

UNKNOWN_CLIENT = "unix:"
# Streams that live as long as a client is connected: each runs on a thread of its own.
LONG_LIVED = {b"/memnest.v1.Memnest/Session"}


def client_of(args: tuple) -> str:
    """The peer of the call gRPC is scheduling. gRPC passes the call's event among the
    arguments it submits; it is the one that carries the call and its metadata."""
    for arg in args:
        call = getattr(arg, "call", None)
        if call is not None and hasattr(arg, "invocation_metadata"):
            try:
                peer = call.peer()
            except Exception:  # a call already torn down: schedule it anyway
                return UNKNOWN_CLIENT
            return peer.decode(errors="replace") if isinstance(peer, bytes) else str(peer)
    return UNKNOWN_CLIENT


def method_of(args: tuple) -> bytes:
    """The RPC method of the call gRPC is scheduling, b"" when it cannot be read."""
    for arg in args:
        details = getattr(arg, "call_details", None)
        if details is not None:
            method = getattr(details, "method", b"")
            return method if isinstance(method, bytes) else str(method).encode()
    return b""


class FairExecutor(futures.Executor):
    """Up to max_workers threads; the next call always comes from the client after the one
    served last, among those with calls waiting."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "call"):
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._waiting: OrderedDict[str, deque] = OrderedDict()  # front = next client to serve
        self._queued = 0
        self._idle = 0
        self._threads: list[threading.Thread] = []
        self._cond = threading.Condition()
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs) -> futures.Future:
        if method_of(args) in LONG_LIVED:
            return self._on_own_thread(fn, args, kwargs)
        return self.submit_for(client_of(args), fn, *args, **kwargs)

    def submit_for(self, client: str, fn, /, *args, **kwargs) -> futures.Future:
        """Run fn in `client`'s turn."""
        future: futures.Future = futures.Future()
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
            queue = self._waiting.get(client)
            if queue is None:
                queue = self._waiting[client] = deque()
            queue.append((future, fn, args, kwargs))
            self._queued += 1
            if self._queued > self._idle and len(self._threads) < self._max_workers:
                thread = threading.Thread(target=self._work, daemon=True,
                                          name=f"{self._prefix}_{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
            else:
                self._cond.notify()
        return future

    def _on_own_thread(self, fn, args, kwargs) -> futures.Future:
        future: futures.Future = futures.Future()
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new calls after shutdown")
        future.set_running_or_notify_cancel()

        def run() -> None:
            try:
                future.set_result(fn(*args, **kwargs))
            except BaseException as exc:  # the future carries it, as ThreadPoolExecutor does
                future.set_exception(exc)

        threading.Thread(target=run, name=f"{self._prefix}_session", daemon=True).start()
        return future

    def waiting(self) -> dict[str, int]:
        """Calls waiting for a worker, per client (for status and tests)."""
        with self._cond:
            return {client: len(queue) for client, queue in self._waiting.items()}

    def _next_call(self):
        client, queue = next(iter(self._waiting.items()))
        item = queue.popleft()
        del self._waiting[client]
        if queue:
            self._waiting[client] = queue  # to the back of the line
        self._queued -= 1
        return item

    def _work(self) -> None:
        while True:
            with self._cond:
                self._idle += 1
                while not self._waiting and not self._shutdown:
                    self._cond.wait()
                self._idle -= 1
                if not self._waiting:
                    return  # shut down and nothing left to run
                future, fn, args, kwargs = self._next_call()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the future carries it, as ThreadPoolExecutor does
                future.set_exception(exc)
            else:
                future.set_result(result)
            del future, fn, args, kwargs  # do not keep a finished call's data alive

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._cond:
            self._shutdown = True
            if cancel_futures:
                for queue in self._waiting.values():
                    for future, *_ in queue:
                        future.cancel()
                self._waiting.clear()
                self._queued = 0
            self._cond.notify_all()
            threads = list(self._threads)
        if wait:
            for thread in threads:
                thread.join()
