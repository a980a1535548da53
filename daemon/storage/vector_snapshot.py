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

A snapshot may also come with a cloned repository. What it keeps that decides safety (the
screening verdicts, the conflict neighbours) and the rows and digests they are keyed by are
sealed with the user's key (core/sealing.py): a snapshot without this user's seal is not
used at all, and the daemon works everything out from the database.
"""
import logging
import os
import sys
import zlib
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from ..core import sealing
from ..core.content_memo import ContentMemo
from .db_files import open_private

log = logging.getLogger(__name__)

SUFFIX = ".vectors.npz"
SEALED_FOR = "vector snapshot"
TERM_ARRAYS = ("analyser", "text_digests", "vocabulary", "term_offsets", "term_ids")
# Index terms are kept only for the tantivy that analysed them (its stemmer may change).
ANALYSER = f"tantivy {version('tantivy')}"


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
    # Each row's keyword-index terms, and a digest of the text they were analysed from
    # (content and tags), so an open need not analyse them again.
    text_digests: list[int] | None = None
    vocabulary: list[str] | None = None
    term_offsets: list[int] | None = None
    term_ids: list[int] | None = None
    # conflict flags' nearest memories (neighbour_table.py's state()), valid only when the
    # database's embeddings are exactly the snapshot's
    neighbours: dict[str, np.ndarray] | None = None
    # what was worked out from each text (injection markers), by text digest
    screened: ContentMemo | None = None

    def row_for(self, memory_id: int, content: str, model: str) -> int | None:
        """The row holding this memory's embedding, if it still matches."""
        row = self.rows.get(memory_id)
        if row is None or model != self.model or int(self.digests[row]) != digest(content):
            return None
        return row

    def terms_for(self, memory_id: int, text: str) -> tuple[str, ...] | None:
        """The memory's index terms, if they were analysed from this very text."""
        row = self.rows.get(memory_id)
        vocabulary, offsets, term_ids = self.vocabulary, self.term_offsets, self.term_ids
        if row is None or self.text_digests is None or vocabulary is None or offsets is None \
                or term_ids is None or self.text_digests[row] != digest(text):
            return None
        return tuple([vocabulary[i] for i in term_ids[offsets[row]:offsets[row + 1]]])


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
            arrays = {name: data[name] for name in data.files if name != "seal"}
            if not sealing.sealed(str(data["seal"]) if "seal" in data.files else None,
                                  SEALED_FOR, *_sealed_parts(arrays)):
                log.warning("ignoring the vector snapshot %s: it does not carry this user's "
                            "seal (written elsewhere, or by an older memnest)", path)
                return None
            saved_model = str(data["model"])
            ids, digests, matrix = data["ids"], data["digests"], data["matrix"]
            terms = [data[k] for k in TERM_ARRAYS] if set(TERM_ARRAYS) <= set(data.files) \
                and str(data["analyser"]) == ANALYSER else None
            neighbours = {k: data[k] for k in data.files if k.startswith("neighbour_")}
            screened = ContentMemo.from_state(
                "screened", {k: data[k] for k in data.files if k.startswith("screened_")})
    except Exception as exc:  # torn, truncated or foreign: only a cache
        log.warning("ignoring the unreadable vector snapshot %s: %s", path, exc)
        return None
    if saved_model != model or matrix.dtype != np.float32 or matrix.ndim != 2 or \
            matrix.shape != (len(ids), dim) or len(digests) != len(ids):
        return None
    snapshot = Snapshot(saved_model, {int(i): row for row, i in enumerate(ids.tolist())},
                        digests.astype(np.uint64, copy=False), matrix,
                        neighbours=neighbours or None, screened=screened)
    if terms is not None:
        _, text_digests, vocabulary, offsets, term_ids = terms
        if len(text_digests) == len(ids) and len(offsets) == len(ids) + 1 and \
                (not len(term_ids) or (offsets[-1] == len(term_ids)
                                       and 0 <= term_ids.min() and
                                       term_ids.max() < len(vocabulary))):
            snapshot.text_digests = text_digests.tolist()
            snapshot.vocabulary = [sys.intern(str(t)) for t in vocabulary.tolist()]
            snapshot.term_offsets = offsets.tolist()
            snapshot.term_ids = term_ids.tolist()
    return snapshot


def save(db_path: str, model: str, ids: np.ndarray, contents: list[str],
         matrix: np.ndarray, texts: list[str], terms: list[tuple[str, ...]],
         neighbours: dict[str, np.ndarray] | None = None,
         screened: ContentMemo | None = None) -> None:
    """Write the snapshot: a private temp file renamed over the old one (a link planted at
    either name is never followed). `texts` and `terms`: each row's keyword-index text and
    the terms the index found in it; `neighbours`: arrays named neighbour_*, kept as they
    are; `screened`: kept for the contents saved."""
    path = path_for(db_path)
    temp = path.with_name(path.name + ".tmp")
    digests = np.fromiter((digest(c) for c in contents), dtype=np.uint64, count=len(contents))
    text_digests = np.fromiter((digest(t) for t in texts), dtype=np.uint64, count=len(texts))
    vocabulary: dict[str, int] = {}
    term_ids: list[int] = []
    offsets = [0]
    for row_terms in terms:
        term_ids.extend(vocabulary.setdefault(t, len(vocabulary)) for t in row_terms)
        offsets.append(len(term_ids))
    try:
        try:
            os.unlink(temp)  # a leftover (or a planted link, or a hard link) is not written
        except FileNotFoundError:
            pass
        fd = open_private(str(temp), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        with os.fdopen(fd, "wb") as f:
            arrays: dict[str, np.ndarray] = {
                "model": np.array(model), "ids": np.asarray(ids, dtype=np.int64),
                "digests": digests, "matrix": np.asarray(matrix, dtype=np.float32),
                "analyser": np.array(ANALYSER), "text_digests": text_digests,
                "vocabulary": np.array(list(vocabulary), dtype=str),
                "term_offsets": np.array(offsets, dtype=np.int64),
                "term_ids": np.array(term_ids, dtype=np.int32), **(neighbours or {}),
                **(screened.state("screened", digests) if screened is not None else {})}
            arrays["seal"] = np.array(sealing.seal(SEALED_FOR, *_sealed_parts(arrays)))
            # numpy's stub types **kwds as its allow_pickle flag
            np.savez(f, **arrays)  # type: ignore[arg-type]
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except (OSError, ValueError) as exc:  # a full disk, a read-only folder, a planted link
        log.warning("could not write the vector snapshot %s: %s", path, exc)
        try:
            os.unlink(temp)
        except OSError:
            pass


def _sealed_parts(arrays: dict[str, np.ndarray]) -> list[bytes]:
    """What the seal covers: every array but the embeddings (checked row by row against the
    database's content, and only a ranking input), by name, type, shape and bytes."""
    parts = []
    for name in sorted(arrays):
        if name == "matrix":
            continue
        value = np.ascontiguousarray(arrays[name])
        parts.append(f"{name}:{value.dtype.str}:{value.shape}".encode())
        parts.append(value.tobytes())
    return parts


def discard(db_path: str) -> None:
    try:
        os.unlink(path_for(db_path))
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("could not remove the vector snapshot %s: %s", path_for(db_path), exc)
