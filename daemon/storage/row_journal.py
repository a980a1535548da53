"""New memories written without a checkpoint (database.Database.transaction), kept in a file
of our own beside the database until the next checkpoint.

LadybugDB replays such small rows from its WAL after a crash, unless a kill -9 tore the
WAL's tail: then it replays only up to the tear, or not at all (wal_recovery.py). The journal
brings those rows back: one JSON line per deferred write, appended before its commit and
confirmed by a line after it, each with one write() call; emptied once a checkpoint has put
the rows in the database file.
"""
import json
import logging
import os
from datetime import datetime

from ..core.anchors import CodeContext
from ..core.records import Memory
from .db_files import open_private

log = logging.getLogger(__name__)

_TIMES = ("created_at", "updated_at", "accessed_at")
_COMMITTED = b"committed\n"


def _line(memories: list[Memory]) -> str:
    rows = []
    for m in memories:
        row = {f: getattr(m, f) for f in Memory.__slots__}
        for f in _TIMES:
            row[f] = None if row[f] is None else row[f].isoformat()
        row["code"] = m.code.to_json()
        rows.append(row)
    return json.dumps(rows, ensure_ascii=False) + "\n"


def _memories(line: str) -> list[Memory]:
    rows = json.loads(line)
    for row in rows:
        for f in _TIMES:
            row[f] = None if row[f] is None else datetime.fromisoformat(row[f])
        row["code"] = CodeContext.parse(row["code"])
    return [Memory(**row) for row in rows]


class RowJournal:
    """Each deferred write appends its rows before its commit and a `committed` line after
    it: rows of a write that never committed are never restored."""

    def __init__(self, path: str):
        self.path = path

    def append(self, memories: list[Memory]) -> int:
        """Journal rows about to be committed; returns the journal's size before them."""
        return self._write(_line(memories).encode("utf-8"))

    def committed(self) -> None:
        self._write(_COMMITTED)

    def cut(self, size: int) -> None:
        """Drop what was appended after `size` (its write rolled back)."""
        fd = open_private(self.path, os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)

    def _write(self, data: bytes) -> int:
        fd = open_private(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            size = os.fstat(fd).st_size
            if os.write(fd, data) != len(data):  # one write() call: all or a torn line
                os.ftruncate(fd, size)
                raise OSError(f"short write to {self.path}")
            return size
        finally:
            os.close(fd)

    def memories(self) -> list[Memory]:
        """Every memory of a committed write (a torn or uncommitted last write is skipped)."""
        try:
            with os.fdopen(open_private(self.path, os.O_RDONLY), "rb") as f:
                lines = f.readlines()
        except FileNotFoundError:
            return []
        out: list[Memory] = []
        candidate: list[Memory] | None = None
        for line in lines:
            if line == _COMMITTED:
                out.extend(candidate or ())
                candidate = None
                continue
            try:
                candidate = _memories(line.decode("utf-8")) if line.endswith(b"\n") else None
            except (ValueError, TypeError, KeyError):
                log.warning("%s: skipped a damaged line", self.path)
                candidate = None
        return out

    def clear(self) -> None:
        try:
            fd = open_private(self.path, os.O_WRONLY)
        except FileNotFoundError:
            return
        try:
            if os.fstat(fd).st_size:
                os.ftruncate(fd, 0)
        finally:
            os.close(fd)
