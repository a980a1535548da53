"""The memory_query guard against the corpus of bypass attempts (tests/cypher_corpus.py), each
with the verdict it must get: against the classifier itself, and against the real engine (a
query the guard calls `read` must change nothing when real_ladybug runs it, and the tricks
marked `real` must really destroy data, so catching them matters). The corpus through the
daemon: tests/reliability/test_cypher_corpus.py.
"""
import ladybug as lb
import pytest
from cypher_corpus import CORPUS, UNREADABLE, D, F, R
from memnest_daemon.cypher import guard as guard


def test_the_corpus_is_big_enough():
    assert len(CORPUS) >= 40
    assert sum(1 for _, kind, _ in CORPUS if kind in (D, F)) >= 40


@pytest.mark.parametrize("query,expected,_real", CORPUS,
                         ids=[repr(q)[:60] for q, _, _ in CORPUS])
def test_classifier_verdicts(query, expected, _real):
    verdict = guard.classify(query)
    assert verdict.kind == expected, (query, verdict)
    if expected != R:
        assert verdict.reasons


@pytest.mark.parametrize("query", UNREADABLE)
def test_text_the_engine_cannot_lex_is_refused(query):
    with pytest.raises(guard.GuardError):
        guard.classify(query)


def test_range_arguments_are_recognised():
    v = guard.classify("UNWIND range(1, $n) AS x UNWIND range(-5, 100000000, 2) AS y RETURN x")
    assert v.ranges == [(1, ("param", "n")), (-5, 100000000, 2)]
    assert guard.range_size(v.ranges[0], {"n": 10}) == 10
    assert guard.range_size(v.ranges[1], {}) == 50000003
    assert guard.range_size((1, ("param", "n")), {}) is None
    assert guard.range_size((None, 5), {}) is None


# -- the engine agrees -------------------------------------------------------------------------

def _fixture_db():
    db = lb.Database(":memory:")
    conn = lb.Connection(db)
    for statement in [
        "CREATE NODE TABLE Memory(id INT64 PRIMARY KEY, content STRING, category STRING, "
        "tags STRING[], importance INT64, workspace STRING, created_at TIMESTAMP, "
        "updated_at TIMESTAMP)",
        "CREATE NODE TABLE Topic(name STRING PRIMARY KEY)",
        "CREATE REL TABLE ABOUT(FROM Memory TO Topic)",
        "CREATE (:Memory {id: 1, content: 'one', category: 'general', importance: 3})",
        "CREATE (:Memory {id: 2, content: 'two', category: 'general', importance: 3})",
        "CREATE (:Topic {name: 'x'})",
        "MATCH (m:Memory), (t:Topic) WHERE m.id = 1 CREATE (m)-[:ABOUT]->(t)",
    ]:
        conn.execute(statement)
    return db, conn


def _state(conn):
    state = []
    for query in ("MATCH (m:Memory) RETURN m.id, m.content, m.category, m.importance "
                  "ORDER BY m.id", "MATCH ()-[r:ABOUT]->() RETURN count(r)",
                  "CALL show_tables() RETURN name", "CALL table_info('Memory') RETURN name"):
        try:
            state.append(conn.execute(query).get_all())
        except RuntimeError as exc:  # a table or column the query dropped
            state.append(str(exc))
    return state


@pytest.mark.parametrize("query,expected,real", [c for c in CORPUS if c[1] == R or c[2]],
                         ids=[repr(c[0])[:60] for c in CORPUS if c[1] == R or c[2]])
def test_engine_agrees(query, expected, real):
    """What the guard reads as `read` changes nothing in the engine; what is marked `real`
    does destroy data there, so the guard is right to stop it."""
    db, conn = _fixture_db()
    try:
        before = _state(conn)
        try:
            conn.execute(query)
        except RuntimeError:
            assert not real, f"the engine rejected {query!r}: the corpus entry is wrong"
        after = _state(conn)
        if expected == R:
            assert after == before
        if real:
            assert after != before
    finally:
        conn.close()
        db.close()
