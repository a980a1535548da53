"""The executor behind the gRPC server takes calls in turns between clients."""
import threading

import pytest

from memnest_daemon.server.fair_calls import UNKNOWN_CLIENT, FairExecutor, client_of


class _Call:
    def __init__(self, peer):
        self._peer = peer

    def peer(self):
        return self._peer


class _Event:
    """Shaped like the event gRPC passes to the executor with each call."""

    def __init__(self, peer):
        self.call = _Call(peer)
        self.invocation_metadata = ()


def _hold(gate: threading.Event, started: threading.Event) -> bool:
    """Keep a worker until `gate` opens, saying when it has one."""
    started.set()
    return gate.wait(10)


def test_the_client_is_the_peer_of_the_call_event():
    assert client_of(("run", "fn", _Event(b"unix-abstract:memnest-1-2"), "state")) == \
        "unix-abstract:memnest-1-2"
    assert client_of((1, 2, 3)) == UNKNOWN_CLIENT


def test_a_quiet_client_is_served_before_a_busy_clients_backlog():
    pool = FairExecutor(max_workers=1)
    gate = threading.Event()
    order = []

    def record(name, _event):
        order.append(name)

    pool.submit(_hold, gate, started := threading.Event())
    started.wait(10)  # the only worker is held while the queues fill
    busy = [pool.submit(record, f"busy{i}", _Event(b"busy")) for i in range(50)]
    quiet = [pool.submit(record, f"quiet{i}", _Event(b"quiet")) for i in range(2)]
    assert pool.waiting() == {"busy": 50, "quiet": 2}
    gate.set()
    for f in busy + quiet:
        f.result(timeout=10)
    assert order[:4] == ["busy0", "quiet0", "busy1", "quiet1"]
    assert order[4:] == [f"busy{i}" for i in range(2, 50)]
    pool.shutdown()


def test_results_and_exceptions_reach_the_future():
    pool = FairExecutor(max_workers=2)
    assert pool.submit(lambda a, b: a + b, 2, 3).result(timeout=10) == 5
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=10)
    pool.shutdown()
    with pytest.raises(RuntimeError):
        pool.submit(print)


def test_workers_grow_only_to_the_limit_and_all_calls_run():
    pool = FairExecutor(max_workers=3)
    lock = threading.Lock()
    running, peak = [0], [0]
    gate = threading.Event()

    def work(_event):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        gate.wait(10)
        with lock:
            running[0] -= 1

    calls = [pool.submit(work, _Event(f"c{i % 5}".encode())) for i in range(40)]
    gate.set()
    for f in calls:
        f.result(timeout=10)
    assert peak[0] <= 3
    assert len(pool._threads) == 3
    pool.shutdown()


def test_shutdown_can_cancel_what_waits():
    pool = FairExecutor(max_workers=1)
    gate = threading.Event()
    first = pool.submit(_hold, gate, started := threading.Event())
    started.wait(10)  # running, so not among what shutdown may cancel
    later = pool.submit(print, "never")
    threading.Timer(0.2, gate.set).start()
    pool.shutdown(wait=True, cancel_futures=True)
    assert first.result() is True
    assert later.cancelled()
