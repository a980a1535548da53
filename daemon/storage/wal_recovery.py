"""Replaying the write-ahead log a crash left beside a database, in a child process.

A WAL that is not empty when a database opens means the last process to write it stopped
without closing it. LadybugDB replays it on open, and a kill -9 can leave it with a torn or
zero-filled tail: with `throw_on_wal_replay_failure` it then refuses the whole file, and some
torn tails crash the engine outright (a segmentation fault, measured with ladybug 0.22.0).
A crash on open would take the daemon and every other workspace with it, on every retry. So
the replay runs in a child process first, and the daemon opens the database only once a
child has checkpointed it cleanly:

1. replay the whole WAL, checkpoint;
2. if that is refused: keep a copy of the WAL aside, replay the part up to its first damaged
   record (every transaction committed before it), checkpoint;
3. if a child died or still failed: move the WAL aside and open the last checkpoint. Rows a
   deferred write committed since come back from the journal of deferred rows
   (row_journal.py).
"""
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .db_files import open_private

log = logging.getLogger(__name__)

REPLAY_TIMEOUT_S = 300
_CHILD = """
import sys
import ladybug
path, whole, max_db_size = sys.argv[1], sys.argv[2] == "whole", int(sys.argv[3])
try:
    db = ladybug.Database(path, max_db_size=max_db_size, buffer_pool_size=64 << 20,
                          throw_on_wal_replay_failure=whole)
    conn = ladybug.Connection(db)
    conn.execute("CHECKPOINT")
    conn.close()
    db.close()
except Exception as exc:
    print(str(exc)[:300], file=sys.stderr)
    sys.exit(3)
"""


class DatabaseLocked(RuntimeError):
    """Another process holds the database: its WAL is that process's business."""


def wal_path(path: str) -> Path:
    return Path(path + ".wal")


def needs_replay(path: str) -> bool:
    try:
        return wal_path(path).stat().st_size > 0
    except FileNotFoundError:
        return False


def replay(path: str, max_db_size: int) -> str:
    """Bring the WAL beside `path` into the database file (steps in the module docstring).
    Returns what happened: "replayed", "replayed-prefix" or "set-aside"."""
    wal = wal_path(path)
    error = _replay_in_child(path, True, max_db_size)
    if error is None:
        return "replayed"
    aside = wal.with_name(f"{wal.name}.unreplayable-{int(time.time() * 1000)}")
    _copy_private(wal, aside)
    prefix_error = _replay_in_child(path, False, max_db_size) if wal.exists() else error
    if prefix_error is None:
        log.warning("%s: the WAL could not be replayed whole (%s); replayed every transaction "
                    "before its first damaged record, and kept a copy as %s",
                    path, error, aside.name)
        return "replayed-prefix"
    if wal.exists():
        os.unlink(wal)
    log.warning("%s: the WAL could not be replayed (%s; then %s); set it aside as %s and "
                "opened the last checkpoint (acknowledged rows written since come back from "
                "the journal of deferred rows)", path, error, prefix_error, aside.name)
    return "set-aside"


def _copy_private(source: Path, target: Path) -> None:
    """Copy without following a link at either end; the copy is a new 0600 file."""
    with os.fdopen(open_private(str(source), os.O_RDONLY), "rb") as src, \
            os.fdopen(open_private(str(target), os.O_WRONLY | os.O_CREAT | os.O_EXCL),
                      "wb") as dst:
        shutil.copyfileobj(src, dst)


def _replay_in_child(path: str, whole: bool, max_db_size: int) -> str | None:
    """None when a child replayed and checkpointed; else why not."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, path, "whole" if whole else "prefix",
             str(max_db_size)], capture_output=True, text=True, timeout=REPLAY_TIMEOUT_S,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    except subprocess.TimeoutExpired:
        return f"replay took over {REPLAY_TIMEOUT_S} s"
    if done.returncode == 0:
        return None
    message = " ".join(done.stderr.split())
    if "set lock" in message:
        raise DatabaseLocked(message)
    if done.returncode < 0:
        return f"the engine crashed replaying it (signal {-done.returncode})"
    return message or f"exit status {done.returncode}"
