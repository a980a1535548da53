"""A readers-writer lock: searches run side by side, writes to one database run one at a time.

Phase-fair: a waiting writer holds back new readers (a stream of searches cannot starve a
store), and the readers that queued behind a writer go in as soon as it is done, before the
next writer (a run of back-to-back writes, such as a dream's merges, cannot starve searches).
"""
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class RWLock:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writer_thread: int | None = None
        self._writers_waiting = 0
        self._readers_waiting = 0
        self._readers_turn = False

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            self._readers_waiting += 1
            while self._writer or (self._writers_waiting and not self._readers_turn):
                self._cond.wait()
            self._readers_waiting -= 1
            if self._readers_waiting == 0 and self._readers_turn:
                self._readers_turn = False
                self._cond.notify_all()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if self._readers == 0:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers or self._readers_turn:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True
            self._writer_thread = threading.get_ident()
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._writer_thread = None
                if self._readers_waiting:
                    self._readers_turn = True
                self._cond.notify_all()

    def held_for_writing(self) -> bool:
        """Whether the calling thread holds the write lock."""
        return self._writer_thread == threading.get_ident()
