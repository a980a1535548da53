"""Centred cosine: context ranking takes the corpus mean from the query and from
every memory before comparing them (kept on the plain cosine's level), so a form every
memory shares (a date and a speaker before each turn) stops bunching all cosines together.
In process with hand-made vectors (hostile queries through the daemon:
tests/test_search_through_daemon.py)."""
import numpy as np
import pytest
from memnest_daemon.search import indexes, ranking  # noqa: F401 (counted below)
from memnest_daemon.search.indexes import VectorIndex
from memnest_daemon.search.tuning import DEFAULT_TUNING
from support import rank_context as _rank, ranking_memory as _memory, ranking_store as _store
from work import counted, package_modules

DIM = 8


def _rows(n: int, seed: int = 3) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, DIM)) + 2.0  # a shared direction
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_centred_equals_the_cosine_of_centred_vectors():
    rows = _rows(300)
    index = VectorIndex(DIM)
    for i, row in enumerate(rows, 1):
        index.upsert(i, row)
    query = _rows(1, seed=9)[0]
    ids = np.array([1, 50, 300, 999])  # 999: no vector
    got = index.scores(query).centred(ids)
    mean = rows.astype(np.float64).mean(axis=0)
    q = query.astype(np.float64) - mean
    level = query @ mean  # the plain cosine's mean over the rows
    slope = np.linalg.norm(q) * np.sqrt(1 - mean @ mean)
    for memory_id, value in zip(ids[:3].tolist(), got[:3].tolist()):
        x = rows[memory_id - 1].astype(np.float64) - mean
        cosine = x @ q / (np.linalg.norm(x) * np.linalg.norm(q))
        assert value == pytest.approx(level + slope * cosine, abs=1e-5)
    assert got[3] == 0.0
    # on the plain cosine's level: about the same mean over every row
    every = np.arange(1, 301)
    assert index.scores(query).centred(every).mean() == pytest.approx(
        index.scores(query).cosines(every).mean(), abs=0.01)


def test_a_small_index_keeps_the_plain_cosine():
    index = VectorIndex(DIM)
    for i, row in enumerate(_rows(indexes.CENTRE_FROM_ROWS - 1), 1):
        index.upsert(i, row)
    ids = np.arange(1, indexes.CENTRE_FROM_ROWS)
    query = _rows(1, seed=9)[0]
    assert index.centre() is None
    assert np.array_equal(index.scores(query).centred(ids), index.scores(query).cosines(ids))


def test_the_mean_is_refreshed_only_after_the_rows_moved():
    index = VectorIndex(DIM)
    rows = _rows(400)
    for i, row in enumerate(rows[:200], 1):
        index.upsert(i, row)
    first = index.centre()
    assert first is not None and index.centre() is first  # kept: no pass per query
    index.upsert(201, rows[200])                      # 0.5% more rows: the same mean
    assert index.centre() is first
    for i in range(202, 210):
        index.upsert(i, rows[i - 1])
    fresh = index.centre()
    assert fresh is not first
    assert fresh.mean == pytest.approx(rows[:209].astype(np.float64).mean(axis=0), abs=1e-6)


def test_row_products_follow_writes_between_refreshes():
    # Re-embedded, removed (the last row moves into the hole) and new rows after the mean was
    # taken: each row's kept product with the mean must be its own.
    index = VectorIndex(DIM)
    rows = _rows(260, seed=5)
    for i, row in enumerate(rows[:250], 1):
        index.upsert(i, row)
    centre = index.centre()
    index.upsert(7, rows[250])      # re-embedded
    index.remove(3)                 # row 250's memory moves into row 2
    index.remove(120)
    index.upsert(251, rows[251])    # new
    assert index.centre() is centre  # still within the drift
    query = _rows(1, seed=11)[0]
    ids = np.array([7, 250, 249, 251, 5, 3])
    got = index.scores(query).centred(ids)
    mean = centre.mean
    q = query.astype(np.float64) - mean
    slope = np.linalg.norm(q) * np.sqrt(1 - mean @ mean)
    vectors = {i: rows[i - 1] for i in range(1, 251)} | {7: rows[250], 251: rows[251]}
    for memory_id, value in zip(ids[:5].tolist(), got[:5].tolist()):
        x = vectors[memory_id].astype(np.float64) - mean
        cosine = x @ q / (np.linalg.norm(x) * np.linalg.norm(q))
        assert value == pytest.approx(query @ mean + slope * cosine, abs=1e-5)
    assert got[5] == 0.0            # removed


def test_a_shared_form_no_longer_outranks_the_content():
    # Every memory leans on one shared direction (its form); memory 1 carries the query's
    # content, memory 2 merely leans on the form harder. Plain cosine prefers 2.
    rng = np.random.default_rng(4)
    form = np.zeros(DIM)
    form[0] = 1.0
    content = np.zeros(DIM)
    content[1] = 1.0
    vectors = {}
    for i in range(1, 161):
        v = 2.0 * form + 0.6 * rng.standard_normal(DIM)
        v[1] = 0.0
        vectors[i] = v
    vectors[1] = 2.0 * form + 0.5 * content
    vectors[1][3] = 1.2  # and something of its own
    vectors[2] = form.copy()
    vectors = {i: (v / np.linalg.norm(v)).astype(np.float32) for i, v in vectors.items()}
    query = (1.5 * form + content) / np.linalg.norm(1.5 * form + content)
    memories = [_memory(i, f"note {i}", minutes=i * 120) for i in vectors]  # no neighbours
    store = _store(memories, vectors)
    plain = store.vectors.scores(query.astype(np.float32)).cosines(np.array([1, 2]))
    assert plain[1] > plain[0]
    assert DEFAULT_TUNING.centre
    assert _rank(store, "unrelated words", query.astype(np.float32))[0].memory.id == 1


def test_a_ten_thousand_word_query_ranks_with_bounded_work():
    # In process, past the tool's length limit: the work follows the candidates, not the
    # query's length. Counted, not timed (tests/work.py): the lines of the search modules
    # run and the characters they hand to their regular expressions.
    def query(words: int) -> str:
        return " ".join(f"word{i}" for i in range(words)) + " lake \x00\ufeff\u0301 \U0001f600"

    def store(count: int):
        return _store([_memory(i, f"lake pottery note {i}", minutes=i)
                       for i in range(1, count + 1)])

    hundreds, more = store(300), store(600)
    ranked = _rank(hundreds, query(10_000))
    assert ranked and "vector" in ranked[0].parts

    modules = package_modules("memnest_daemon.search")
    work = {(count, words): counted(_rank, memories, query(words), modules=modules).total
            for count, memories in ((300, hundreds), (600, more)) for words in (0, 10_000, 20_000)}
    # reading the query is linear in its length...
    assert work[300, 20_000] < 2.5 * work[300, 10_000], work
    # ...and a long query costs no more per candidate than a short one: no work grows with
    # the candidates times the words
    added_long = work[600, 10_000] - work[300, 10_000]
    added_short = work[600, 0] - work[300, 0]
    assert added_long <= 2 * added_short + 1_000, work
