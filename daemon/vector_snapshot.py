"""A copy of a database's embeddings kept beside it, so that opening a workspace does not read
every embedding through the Python binding: 384 Python floats per memory were most of a
workspace's open time, and the scan left the embedding pages in LadybugDB's buffer pool.

It is a cache, never the truth. Each of its rows carries the memory's id and a digest of the
exact content it was embedded from, under one model; the daemon uses a row only when the
database still holds that id with that content, that model and an embedding, and reads every
other embedding from the database. It is written when a workspace closes (and after an open
that had to read many embeddings), atomically and without following links, and deleted when
something wrote to the database behind the daemon's back (raw Cypher), since such a write
could change an embedding without changing the content.
"""
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

SUFFIX = ".vectors.npz"


def path_for(db_path: str) -> Path:
    return Path(db_path + SUFFIX)


def digest(content: str) -> int:
    """The exact text that was embedded (case and spacing included), as its length and CRC-32
    in 64 bits: a cheap check that runs once per memory on open."""
    data = content.encode("utf-8", "surrogatepass")
    return (len(data) << 32) | zlib.crc32(data)


@dataclass
class Snapshot:
    model: str
    rows: dict[int, int]     # memory id -> row
    digests: np.ndarray      # uint64 per row
    matrix: np.ndarray       # float32, one unit vector per row

    def row_for(self, memory_id: int, content: str, model: str) -> int | None:
        """The row holding this memory's embedding, if it still matches."""
        row = self.rows.get(memory_id)
        if row is None or model != self.model or int(self.digests[row]) != digest(content):
            return None
        return row


def load(db_path: str, model: str, dim: int) -> Snapshot | None:
    """The snapshot beside `db_path` when one exists, is readable and was written for this
    model and dimension; None otherwise (the embeddings then come from the database)."""
    path = path_for(db_path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("ignoring the vector snapshot %s: %s", path, exc)
        return None
    try:
        with os.fdopen(fd, "rb") as f, np.load(f, allow_pickle=False) as data:
            saved_model = str(data["model"])
            ids, digests, matrix = data["ids"], data["digests"], data["matrix"]
    except Exception as exc:  # torn, truncated or foreign: only a cache
        log.warning("ignoring the unreadable vector snapshot %s: %s", path, exc)
        return None
    if saved_model != model or matrix.dtype != np.float32 or matrix.ndim != 2 or \
            matrix.shape != (len(ids), dim) or len(digests) != len(ids):
        return None
    return Snapshot(saved_model, {int(i): row for row, i in enumerate(ids.tolist())},
                    digests.astype(np.uint64, copy=False), matrix)


def save(db_path: str, model: str, ids: np.ndarray, contents: list[str],
         matrix: np.ndarray) -> None:
    """Write the snapshot: a private temp file renamed over the old one (a link planted at
    either name is never followed)."""
    path = path_for(db_path)
    temp = path.with_name(path.name + ".tmp")
    digests = np.fromiter((digest(c) for c in contents), dtype=np.uint64, count=len(contents))
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(temp, flags, 0o600)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, model=np.array(model), ids=np.asarray(ids, dtype=np.int64),
                     digests=digests, matrix=np.asarray(matrix, dtype=np.float32))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except (OSError, ValueError) as exc:  # a full disk, a read-only folder, a planted link
        log.warning("could not write the vector snapshot %s: %s", path, exc)
        try:
            os.unlink(temp)
        except OSError:
            pass


def discard(db_path: str) -> None:
    try:
        os.unlink(path_for(db_path))
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("could not remove the vector snapshot %s: %s", path_for(db_path), exc)
