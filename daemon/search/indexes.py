"""The two derived search indexes of a database: exact cosine and BM25 keywords.

Both live in memory, are rebuilt from the database when it opens and are changed only by the
daemon's own writes, right after they commit: the daemon is the only writer, so they cannot
drift from the database.
"""
import math
import re
import threading
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

import numpy as np
import tantivy

from ..core.growable import grown
from ..core.records import Memory
from .corpus_mean import CorpusMean
from .row_bound import RowBound
from .term_table import TermTable

_WORD = re.compile(r"\w+", re.UNICODE)
COMMIT_DELAY_S = 0.25  # a write's keyword documents are committed this long after it
# From this many rows a query reads a bound for every row (row_bound.py) and only the rows
# that can matter in full: past it, memory traffic dominates, more so as the model's run
# between two searches leaves little of the matrix in the cache
# (bench/RESULTS.md#search-eight-at-once).
BOUND_FROM_ROWS = 8192
# A search with a high floor (conflict neighbours, merge candidates) gains from the bound much
# earlier, since few rows reach the floor; a query's 100 best do not, so they wait for
# BOUND_FROM_ROWS (bench/RESULTS.md#search-profiles).
FLOOR_BOUND_FROM_ROWS = 4096


SMALL_SCOPE_SHARE = 8  # a scope under 1/8 of the rows is read row by row, not in one pass
# Centred cosine (Scores.centred) needs a mean that stands for the corpus's common form, not
# for a few memories' content: below this many rows the plain cosine is used.
CENTRE_FROM_ROWS = 100


def top_hits(ids: np.ndarray, scores: np.ndarray, k: int,
             min_score: float) -> list[list[tuple[int, float]]]:
    """Per row of `scores` (columns aligned with `ids`): the k best of at least `min_score`,
    best first, ties by id."""
    out: list[list[tuple[int, float]]] = []
    k = min(k, len(ids))
    for row in scores:
        if k == 0:
            out.append([])
            continue
        top = np.flatnonzero(row >= min_score) if min_score > -1.0 else None
        if top is None or len(top) > k:
            top = np.argpartition(-row, k - 1)[:k] if top is None else \
                top[np.argpartition(-row[top], k - 1)[:k]]
        top = top[np.lexsort((ids[top], -row[top]))]
        out.append(list(zip(ids[top].tolist(), row[top].tolist())))
    return out


class VectorIndex:
    """Unit vectors in one float32 matrix; search is one matrix-vector product (in a large
    index, one over a smaller copy first: see BOUND_FROM_ROWS)."""

    def __init__(self, dim: int):
        self.dim = dim
        self._matrix = np.zeros((64, dim), dtype=np.float32)
        self._ids = np.zeros(64, dtype=np.int64)
        self._row: dict[int, int] = {}
        self._row_of = np.full(64, -1, dtype=np.int64)  # the same by id, for gathers; -1: none
        self._bound: RowBound | None = None
        self._centre: CorpusMean | None = None  # worked out by the first centred search

    def __len__(self) -> int:
        return len(self._row)

    def ids(self) -> set[int]:
        return set(self._row)

    def upsert(self, memory_id: int, vector: np.ndarray) -> None:
        row = self._row.get(memory_id)
        if row is None:
            row = len(self._row)
            if row == len(self._ids):
                self._matrix = np.concatenate([self._matrix, np.zeros_like(self._matrix)])
                self._ids = np.concatenate([self._ids, np.zeros_like(self._ids)])
            self._row[memory_id] = row
            self._ids[row] = memory_id
            self._set_row(memory_id, row)
        self._matrix[row] = vector
        if self._centre is not None:
            self._centre.set_row(row, self._matrix[row])
        if self._bound is not None:
            self._bound.set_rows(row, self._matrix[row:row + 1])
        elif len(self._row) >= min(BOUND_FROM_ROWS, FLOOR_BOUND_FROM_ROWS):
            self._fit_bound()

    def _fit_bound(self) -> None:
        n = len(self._row)
        self._bound = RowBound(self._matrix[:n], len(self._ids))
        for first in range(0, n, 8192):  # in slices: one pass would copy the matrix twice
            self._bound.set_rows(first, self._matrix[first:min(n, first + 8192)])

    def _set_row(self, memory_id: int, row: int) -> None:
        if memory_id <= 0:
            return  # not a valid id (a foreign database's): left out of the gathers
        self._row_of = grown(self._row_of, memory_id + 1, -1)
        self._row_of[memory_id] = row

    def load(self, ids: list[int], matrix: np.ndarray) -> None:
        """Fill an empty index in one step (opening a database)."""
        assert not self._row, "load() fills an empty index"
        if not ids:
            return
        capacity = max(64, len(ids) + len(ids) // 8)  # room to grow, not double
        self._matrix = np.zeros((capacity, self.dim), dtype=np.float32)
        self._matrix[:len(ids)] = matrix
        self._ids = np.zeros(capacity, dtype=np.int64)
        self._ids[:len(ids)] = ids
        self._row = {memory_id: row for row, memory_id in enumerate(ids)}
        self._row_of = np.full(max(64, max(ids) + 1), -1, dtype=np.int64)
        valid = np.flatnonzero(self._ids[:len(ids)] > 0)  # see _set_row
        self._row_of[self._ids[valid]] = valid
        if len(ids) >= min(BOUND_FROM_ROWS, FLOOR_BOUND_FROM_ROWS):
            self._fit_bound()

    def remove(self, memory_id: int) -> None:
        row = self._row.pop(memory_id, None)
        if row is None:
            return
        self._set_row(memory_id, -1)
        last = len(self._row)  # index of the last live row, after the pop
        if row != last:
            moved = int(self._ids[last])
            self._matrix[row] = self._matrix[last]
            self._ids[row] = moved
            self._row[moved] = row
            self._set_row(moved, row)
            if self._centre is not None:
                self._centre.move(last, row)
            if self._bound is not None:
                self._bound.move(last, row)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Every id and its vector, row for row: views, valid while the store's lock is held
        (copy what must outlive it)."""
        n = len(self._row)
        return self._ids[:n], self._matrix[:n]

    def centre(self) -> CorpusMean | None:
        """The rows' mean and each row's product with it, None under CENTRE_FROM_ROWS rows
        (refreshed when the row count has moved: corpus_mean.py). Read lock held; two readers
        may both refresh it, from the same rows, and either result is kept whole."""
        n = len(self._row)
        if n < CENTRE_FROM_ROWS:
            return None
        known = self._centre
        if known is None or known.stale(n):
            known = self._centre = CorpusMean(self._matrix, n)
        return known

    def vector(self, memory_id: int) -> np.ndarray | None:
        row = self._row.get(memory_id)
        return None if row is None else self._matrix[row].copy()

    def scores(self, query: np.ndarray) -> "Scores":
        """Cosine similarity of `query` to the rows (unit vectors), read as needed."""
        return Scores(self, query)

    def _rows_for(self, ids: np.ndarray) -> np.ndarray:
        """The row of each of `ids` (-1: no vector)."""
        return self._row_of[np.where((ids > 0) & (ids < len(self._row_of)), ids, 0)]

    def search(self, query: np.ndarray, allowed: AbstractSet[int] | None,
               k: int) -> list[tuple[int, float]]:
        """The k most similar memories among `allowed` (all when None), best first."""
        return self.search_many(query[None, :], allowed, k)[0]

    def search_many(self, queries: np.ndarray, allowed: AbstractSet[int] | None, k: int,
                    min_score: float = -1.0) -> list[list[tuple[int, float]]]:
        """search() for each row of `queries`, from one pass over the matrix; only scores of
        at least `min_score` (a high floor skips most of the sorting)."""
        if k <= 0:
            return [[] for _ in queries]
        ids, rows = self._scope(allowed)
        queries = queries.astype(np.float32)
        if len(ids) == 0:  # an import into an empty workspace: nothing to compare with
            return [[] for _ in queries]
        if rows is not None and len(rows) * SMALL_SCOPE_SHARE < len(self._row):
            # A small scope (a workspace in a shared database, a new workspace filling up):
            # its own rows cost less than a pass over every row.
            return top_hits(ids, (self._matrix[rows] @ queries.T).T, k, min_score)
        if self.bounded(min_score):
            return self._bounded_top(queries, ids, rows, k, min_score)
        # matrix @ queries.T, not queries @ matrix.T: the faster order
        # (bench/RESULTS.md#search-profiles)
        scores = (self._matrix[:len(self._row)] @ queries.T).T
        return top_hits(ids, scores if rows is None else scores[:, rows], k, min_score)

    def bounded(self, min_score: float = -1.0) -> bool:
        """Whether a search down to `min_score` reads the bound first."""
        return self._bound is not None and (min_score > -1.0 or len(self._row) >= BOUND_FROM_ROWS)

    def _bounded_top(self, queries: np.ndarray, ids: np.ndarray, rows: np.ndarray | None,
                     k: int, min_score: float) -> list[list[tuple[int, float]]]:
        """top_hits() over exact scores, reading in full only the rows whose bound reaches the
        floor and the k-th best exact score of the 2k best bounds (no other row can)."""
        assert self._bound is not None  # bounded() said so
        bounds = self._bound.bounds(queries, len(self._row))
        if rows is None:
            rows = np.arange(len(ids))
        else:
            bounds = bounds[:, rows]
        out = []
        for query, bound in zip(queries, bounds):
            reach = np.flatnonzero(bound >= min_score) if min_score > -1.0 else \
                np.arange(len(bound))
            if len(reach) > k > 0:
                probe = reach[np.argpartition(-bound[reach], min(2 * k, len(reach)) - 1)
                              [:min(2 * k, len(reach))]]
                exact = self._matrix[rows[probe]] @ query
                kth = np.partition(exact, len(probe) - k)[len(probe) - k]
                reach = reach[bound[reach] >= kth]
            exact = self._matrix[rows[reach]] @ query
            out.extend(top_hits(ids[reach], exact[None, :], k, min_score))
        return out

    def _scope(self, allowed: AbstractSet[int] | None) -> tuple[np.ndarray, np.ndarray | None]:
        """The ids in scope and their rows (None: every row)."""
        ids = self._ids[:len(self._row)]
        if allowed is None:
            return ids, None
        rows = np.flatnonzero(np.isin(ids, np.fromiter(allowed, dtype=np.int64,
                                                       count=len(allowed))))
        return ids[rows], rows

class Scores:
    """One query's cosine similarity to an index's rows: all of them from one product, or in
    a large index only those asked for or able to reach the best (VectorIndex._bounded_top).
    Valid while the store's lock is held."""

    def __init__(self, index: VectorIndex, query: np.ndarray):
        self._index = index
        self._query = query.astype(np.float32)
        self._all = None if index.bounded() else \
            index._matrix[:len(index)] @ self._query

    def best(self, allowed: AbstractSet[int] | None, k: int) -> list[tuple[int, float]]:
        """The k most similar ids among `allowed` (all when None), best first."""
        if k <= 0:
            return []
        index = self._index
        ids, rows = index._scope(allowed)
        if self._all is None:
            return index._bounded_top(self._query[None, :], ids, rows, k, -1.0)[0]
        return top_hits(ids, (self._all if rows is None else self._all[rows])[None, :],
                        k, -1.0)[0]

    def centred(self, ids: np.ndarray) -> np.ndarray:
        """The similarity of each of `ids` with the corpus mean taken from the query and from
        every row, on the plain cosine's scale (0.0 for an id without a vector).

        Memories that share a form (a date and a speaker before every turn, a project's
        boilerplate) have plain cosines bunched high whatever their content, and a row that
        leans on the shared form scores well with every query. The cosine c of the centred
        vectors compares content only. Returned as q·m + |q - m|·sqrt(1 - |m|²)·c: the same
        order as c, at the plain cosine's level (whose mean over the rows is q·m), so scores
        built on it keep their meaning (the recall hook's floor). Exact from the plain cosine
        and each row's product with the mean (kept per row), rows being unit vectors."""
        raw = self.cosines(ids)
        centre = self._index.centre()
        if centre is None:
            return raw
        mean = centre.mean
        rows = self._index._rows_for(ids)
        have = rows >= 0
        row_mean = np.where(have, centre.row_mean[np.where(have, rows, 0)], 0.0)
        query = self._query.astype(np.float64)
        query_mean, mean_mean = float(query @ mean), float(mean @ mean)
        query_norm = math.sqrt(max(0.0, float(query @ query) - 2.0 * query_mean + mean_mean))
        row_norms = np.sqrt(np.maximum(0.0, 1.0 - 2.0 * row_mean + mean_mean))
        norms = row_norms * query_norm
        cosine = np.divide(raw - row_mean - query_mean + mean_mean, norms,
                           out=np.zeros(len(ids), dtype=np.float64), where=norms > 1e-9)
        level = query_mean + query_norm * math.sqrt(max(0.0, 1.0 - mean_mean)) * cosine
        return np.where(have, level, 0.0)

    def cosines(self, ids: np.ndarray) -> np.ndarray:
        """The similarity of each of `ids` (float64; 0.0 for an id without a vector)."""
        rows = self._index._rows_for(ids)
        if self._all is not None and len(self._all):
            return np.where(rows >= 0, self._all[rows], 0.0).astype(np.float64)
        out = np.zeros(len(ids), dtype=np.float64)
        have = rows >= 0
        out[have] = self._index._matrix[rows[have]] @ self._query
        return out


def bm25_idf(documents: int, frequency: int) -> float:
    """BM25's inverse document frequency of a term `frequency` of `documents` hold."""
    if frequency == 0:
        return 0.0
    return math.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5))


def keyword_text(m: Memory) -> str:
    """What the keyword index reads of a memory: its content and its tags."""
    return m.content + "\n" + " ".join(m.tags)


# A memory's index terms analysed earlier from this very text, or None (analyse it again).
KnownTerms = Callable[[int, str], Iterable[str] | None]


class KeywordIndex:
    """BM25 over content and tags (English stemming), with workspace and category as exact
    terms so filters run inside the index rather than after it."""

    def __init__(self) -> None:
        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("id", stored=True, indexed=True, fast=True)
        builder.add_text_field("text", stored=False, tokenizer_name="en_stem")
        builder.add_text_field("workspace", stored=False, tokenizer_name="raw")
        builder.add_text_field("category", stored=False, tokenizer_name="raw")
        builder.add_text_field("tag", stored=False, tokenizer_name="raw")
        self._schema = builder.build()
        self._index = tantivy.Index(self._schema)
        self._writer = self._index.writer(heap_size=15_000_000, num_threads=1)
        self._lock = threading.Lock()
        # A tantivy commit costs more than the rest of a single store
        # (bench/RESULTS.md#write-throughput).
        # Writes only stage their documents; the next search commits them first (so it always
        # sees every acknowledged write), and a timer commits a quiet index so searches rarely
        # wait.
        self._staged = False
        self.version = 0  # bumped by every change to the documents
        self._ids: set[int] = set()
        # Each memory's distinct terms and every term's document frequency, for term-level
        # questions the BM25 query cannot answer (which query terms a memory contains).
        self._terms = TermTable()
        # The same analysis as tantivy's en_stem: terms here are the index's terms.
        self._analyzer = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
                          .filter(tantivy.Filter.remove_long(40))
                          .filter(tantivy.Filter.lowercase())
                          .filter(tantivy.Filter.stemmer("english")).build())

    def __len__(self) -> int:
        return len(self._ids)

    def ids(self) -> set[int]:
        return set(self._ids)

    def upsert_many(self, docs: Iterable[Memory],
                    known_terms: KnownTerms | None = None) -> None:
        """docs: iterable of Memory records. One commit for the lot. `known_terms(id, text)`
        may give a memory's terms analysed earlier from the same text (None: analyse it)."""
        with self._lock:
            batch: dict[int, Iterable[str]] = {}
            for m in docs:
                if m.id in self._ids:
                    self._writer.delete_documents_by_term("id", m.id)
                text = keyword_text(m)
                self._writer.add_document(tantivy.Document(
                    id=m.id, text=text,
                    workspace=m.workspace, category=m.category, tag=list(m.tags) or [""]))
                self._ids.add(m.id)
                terms = None if known_terms is None else known_terms(m.id, text)
                batch[m.id] = set(self._analyzer.analyze(text)) if terms is None else terms
            self._terms.put(batch)
            self.version += 1
            self._stage()

    def remove_many(self, ids: Iterable[int]) -> None:
        with self._lock:
            gone = [memory_id for memory_id in ids if memory_id in self._ids]
            for memory_id in gone:
                self._writer.delete_documents_by_term("id", memory_id)
                self._ids.discard(memory_id)
            self._terms.remove(gone)
            self.version += 1
            self._stage()

    def analyse(self, text: str) -> list[str]:
        """`text` as the index's terms (lower-cased, stemmed), in order."""
        return self._analyzer.analyze(text)

    def idf(self, term: str) -> float:
        """BM25's inverse document frequency of an index term; 0 for a term no memory has."""
        return bm25_idf(len(self._ids), self._terms.frequency(term))

    def frequency(self, term: str) -> int:
        """How many memories hold the index term."""
        return self._terms.frequency(term)

    def terms_of(self, memory_id: int) -> tuple[str, ...]:
        """The distinct index terms of a memory."""
        return self._terms.of(memory_id)

    def term_bits(self, terms: list[str], ids: np.ndarray) -> np.ndarray:
        """For each of `ids`, which of `terms` (at most 64) it contains: bit j for terms[j]."""
        return self._terms.bits(terms, ids)

    def _stage(self) -> None:
        """Lock held: documents were added or deleted; commit them soon."""
        if not self._staged:
            self._staged = True
            timer = threading.Timer(COMMIT_DELAY_S, self.commit)
            timer.daemon = True
            timer.start()

    def commit(self) -> None:
        """Make staged documents searchable (a no-op when nothing is staged)."""
        with self._lock:
            if self._staged:
                self._writer.commit()
                self._index.reload()
                self._staged = False

    def search(self, text: str, k: int, workspace: str | None = None,
               categories: list[str] | None = None, tags: list[str] | None = None
               ) -> list[tuple[int, float]]:
        # Only word characters reach the query parser: user text can never be query syntax.
        words = [w.lower() for w in _WORD.findall(text)]
        if not words or k <= 0:
            return []
        self.commit()
        clauses = [(tantivy.Occur.Must, self._index.parse_query(" ".join(words), ["text"]))]
        if workspace is not None:
            clauses.append((tantivy.Occur.Must,
                            tantivy.Query.term_query(self._schema, "workspace", workspace)))
        for field, values in (("category", categories), ("tag", tags)):
            if values:
                clauses.append((tantivy.Occur.Must, tantivy.Query.boolean_query(
                    [(tantivy.Occur.Should, tantivy.Query.term_query(self._schema, field, v))
                     for v in values])))
        searcher = self._index.searcher()
        hits = searcher.search(tantivy.Query.boolean_query(clauses), k).hits
        return [(int(searcher.doc(addr)["id"][0]), float(score)) for score, addr in hits]
