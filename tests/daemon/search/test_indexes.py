"""The in-memory search indexes on their own: what a write makes visible, and when."""
import time

import numpy as np

from memnest_daemon.search import indexes
from memnest_daemon.search.indexes import KeywordIndex, VectorIndex
from memnest_daemon.core.records import Memory, content_hash, utcnow


def memory(memory_id: int, text: str, workspace: str = "/w") -> Memory:
    now = utcnow()
    return Memory(id=memory_id, content=text, content_hash=content_hash(text),
                  category="general", tags=[], importance=3, access_count=0,
                  workspace=workspace, created_at=now, updated_at=now, accessed_at=None,
                  embedding_model="test")


def test_keyword_writes_are_searchable_at_once_though_commits_are_deferred():
    index = KeywordIndex()
    for n in range(1, 30):
        index.upsert_many([memory(n, f"note {n} about the payment worker queue")])
        hits = dict(index.search("payment worker", 100))
        assert set(hits) == set(range(1, n + 1))  # every write before this search
    index.upsert_many([memory(5, "rewritten: the invoice mailer")])
    index.remove_many([7])
    assert 5 not in dict(index.search("payment", 100))
    assert 7 not in dict(index.search("payment", 100))
    assert dict(index.search("invoice mailer", 10)).keys() == {5}


def test_a_quiet_keyword_index_commits_by_itself():
    index = KeywordIndex()
    index.upsert_many([memory(1, "the audit log rotates nightly")])
    deadline = time.monotonic() + 5
    while index._staged and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not index._staged, f"not committed {indexes.COMMIT_DELAY_S}s after a write"
    assert dict(index.search("audit", 10)).keys() == {1}


def test_vector_search_many_finds_each_querys_nearest_within_scope():
    rng = np.random.default_rng(7)
    index = VectorIndex(16)
    vectors = rng.normal(size=(300, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for n, v in enumerate(vectors, 1):
        index.upsert(n, v)
    index.remove(42)
    allowed = set(range(1, 301, 3))
    small = set(range(1, 301, 20))  # under 1/8 of the rows: read row by row
    queries = vectors[:7]
    for scope in (None, allowed, small, set()):
        live = [n for n in range(1, 301) if n != 42 and (scope is None or n in scope)]
        for q, got in zip(queries, index.search_many(queries, scope, 11)):
            expected = sorted(live, key=lambda n: -float(vectors[n - 1] @ q))[:11]
            assert [n for n, _ in got] == expected
            assert np.allclose([s for _, s in got], [vectors[n - 1] @ q for n in expected],
                               atol=1e-5)
    for q, got in zip(queries, index.search_many(queries, None, 11, min_score=0.5)):
        expected = [n for n, s in index.search(q, None, 11) if s >= 0.5]
        assert [n for n, _ in got] == expected
    for q in queries:
        for scope in (None, allowed, set()):
            assert [n for n, _ in index.scores(q).best(scope, 11)] == \
                [n for n, _ in index.search(q, scope, 11)]


def test_vector_index_loaded_in_one_step_behaves_like_one_filled_row_by_row():
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(100, 16)).astype(np.float32)
    ids = list(range(3, 303, 3))
    loaded, filled = VectorIndex(16), VectorIndex(16)
    loaded.load(ids, vectors)
    for memory_id, v in zip(ids, vectors):
        filled.upsert(memory_id, v)
    assert len(loaded) == 100 and sorted(loaded.ids()) == ids
    for q in vectors[:5]:
        assert loaded.search(q, None, 7) == filled.search(q, None, 7)
    loaded.upsert(999, vectors[0])  # grows past what load() allocated as it must
    loaded.remove(3)
    assert len(loaded) == 100 and np.allclose(loaded.vector(999), vectors[0])


def test_a_large_index_reads_only_rows_that_can_matter_and_answers_the_same(monkeypatch):
    """Above BOUND_FROM_ROWS a query bounds every row from a smaller copy of the matrix and
    reads in full only rows that can reach the answer: the answers must be the full
    product's, through additions, re-embeddings and removals."""
    from memnest_daemon.search import row_bound

    rng = np.random.default_rng(3)
    dim = 48
    mixing = rng.normal(size=(dim, dim)) * np.exp(-np.arange(dim) / 6.0)  # a few main axes

    def unit(n):
        v = (rng.normal(size=(n, dim)) @ mixing.T).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    monkeypatch.setattr(indexes, "BOUND_FROM_ROWS", 400)
    monkeypatch.setattr(row_bound, "DIMS", 8)
    bounded, full = VectorIndex(dim), VectorIndex(dim)
    vectors = unit(900)
    bounded.load(list(range(1, 501)), vectors[:500])
    full.load(list(range(1, 501)), vectors[:500])
    for n in range(501, 901):  # past the threshold by upserts, and then some
        bounded.upsert(n, vectors[n - 1])
        full.upsert(n, vectors[n - 1])
    for n, v in zip(range(1, 900, 7), unit(129)):  # re-embedded
        bounded.upsert(n, v)
        full.upsert(n, v)
    for n in range(3, 900, 11):
        bounded.remove(n)
        full.remove(n)
    monkeypatch.setattr(indexes, "BOUND_FROM_ROWS", 10**9)
    full._bound = None  # the reference reads every row
    assert bounded._bound is not None
    scope = set(range(1, 901, 2))
    for q in unit(20):
        for allowed in (None, scope, set()):
            for k, floor in ((11, -1.0), (11, 0.5), (100, -1.0), (1, -1.0)):
                got = bounded.search_many(q[None, :], allowed, k, min_score=floor)[0]
                want = full.search_many(q[None, :], allowed, k, min_score=floor)[0]
                assert [n for n, _ in got] == [n for n, _ in want]
                assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-5)
            assert [n for n, _ in bounded.scores(q).best(allowed, 25)] == \
                [n for n, _ in full.scores(q).best(allowed, 25)]
        ids = np.array([0, 1, 3, 5, 899, 900, 10**6])
        assert np.allclose(bounded.scores(q).cosines(ids), full.scores(q).cosines(ids),
                           atol=1e-5)
    q = unit(1)[0]
    bounds = bounded._bound.bounds(q[None, :], len(bounded))[0]
    exact = bounded._matrix[:len(bounded)] @ q
    assert (bounds >= exact).all()
    # the point of it: most rows cannot reach the 11th best, and are never read in full
    assert (bounds >= np.sort(exact)[-11]).mean() < 0.2


def test_a_mid_sized_index_bounds_only_searches_with_a_floor(monkeypatch):
    """Between FLOOR_BOUND_FROM_ROWS and BOUND_FROM_ROWS a search down to a floor (conflict
    neighbours, merge candidates) reads the bound first; a query without one still reads
    every row. Both answer as the full product does."""
    from memnest_daemon.search import row_bound

    rng = np.random.default_rng(5)
    dim = 32
    mixing = rng.normal(size=(dim, dim)) * np.exp(-np.arange(dim) / 5.0)

    def unit(n):
        v = (rng.normal(size=(n, dim)) @ mixing.T).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    monkeypatch.setattr(indexes, "FLOOR_BOUND_FROM_ROWS", 300)
    monkeypatch.setattr(row_bound, "DIMS", 8)
    index = VectorIndex(dim)
    vectors = unit(600)
    index.load(list(range(1, 601)), vectors)
    assert index._bound is not None
    assert not index.bounded() and index.bounded(0.5)
    assert index.scores(vectors[0])._all is not None  # a query reads every row
    # a few queries and many (row_bound.MANY_QUERIES: the bounds are laid out another way)
    for queries in (unit(10), unit(row_bound.MANY_QUERIES + 24)):
        full = (index._matrix[:600] @ queries.T).T
        for floor in (0.3, 0.6, 0.9):
            got = index.search_many(queries, None, 11, min_score=floor)
            for row, hits in zip(full, got):
                best = np.flatnonzero(row >= floor)
                best = best[np.lexsort((best, -row[best]))][:11]
                assert [n for n, _ in hits] == (best + 1).tolist()
                assert np.allclose([s for _, s in hits], row[best], atol=1e-5)


def test_the_bound_grows_by_steps_not_by_row(monkeypatch):
    """Appending rows one at a time to a large index copies the low-dimension copy a few
    times, not once per row (a 100k import slowed to 65 memories/s when it did)."""
    from memnest_daemon.search import row_bound

    monkeypatch.setattr(indexes, "BOUND_FROM_ROWS", 50)
    monkeypatch.setattr(row_bound, "DIMS", 4)
    index = VectorIndex(8)
    rng = np.random.default_rng(1)
    copies, last = 0, None
    for n in range(1, 3001):
        v = rng.normal(size=8).astype(np.float32)
        index.upsert(n, v / np.linalg.norm(v))
        if index._bound is not None and index._bound.low is not last:
            copies, last = copies + 1, index._bound.low
    assert copies <= 15
