"""The memory_query guard: a corpus of bypass attempts, each with the verdict it must get.

Every entry is checked three ways: against the classifier itself; against the real engine
(a query the guard calls `read` must change nothing when real_ladybug runs it, and the tricks
marked `real` must really destroy data, so catching them matters); and a sample through the
daemon, where refused queries must leave every memory in place.
"""
import pytest
import ladybug as lb

from memnest_daemon.cypher import guard as guard
from memnest_shims.client import ToolFailure

R, W, D, F = guard.READ, guard.WRITE, guard.DESTRUCTIVE, guard.FORBIDDEN

# (query, expected verdict, whether the engine really runs it and destroys data)
CORPUS = [
    # the 0.19.0 bypass and its relatives: keywords split by any whitespace
    ("MATCH (m:Memory)\nDETACH\nDELETE\nm;", D, True),
    ("MATCH (m:Memory)\tDETACH\tDELETE\tm", D, True),
    ("MATCH (m:Memory) DETACH\r\nDELETE m", D, True),
    ("MATCH (m:Memory) DETACH\x0bDELETE m", D, True),
    ("MATCH (m:Memory) DETACH\x0cDELETE m", D, True),
    ("MATCH (m:Memory) DETACH\u00a0DELETE m", D, True),
    ("MATCH (m:Memory) DETACH\u2003DELETE m", D, True),
    ("MATCH (m:Memory)\u2028DETACH DELETE m", D, True),
    ("MATCH (m:Memory)\u3000DETACH\u180eDELETE m", D, True),
    ("MATCH(m:Memory)DETACH DELETE(m)", D, True),
    # mixed case
    ("match (m:Memory) detach delete m", D, True),
    ("MaTcH (m:Memory) DeTaCh DeLeTe m", D, True),
    # comments between or around the keywords
    ("MATCH (m:Memory) DETACH/**/DELETE m", D, True),
    ("MATCH (m:Memory) /* harmless */ DETACH /* really */ DELETE m", D, True),
    ("MATCH (m:Memory) DETACH DELETE m // only a comment", D, True),
    ("/* read only */ MATCH (m:Memory) DETACH DELETE m", D, True),
    ("MATCH (m:Memory) DETACH DELETE m /* unterminated", D, False),
    # `//` then a lone carriage return is not a comment: `//*\r*/` is `/` + `/* */`
    ("RETURN 8 //*\r*/ 2; MATCH (m:Memory) DETACH DELETE m", D, True),
    # `**/` does not close a block comment, `***/` does
    ("RETURN 1 /* a ***/ ; MATCH (m:Memory) DETACH DELETE m", D, True),
    # `--` is not a comment in this dialect
    ("MATCH (m:Memory) RETURN m -- DETACH DELETE m", D, False),
    # multi-statement: the worst part counts
    ("MATCH (m:Memory) RETURN count(m); MATCH (m:Memory) DETACH DELETE m", D, True),
    ("RETURN 1;MATCH(m:Memory)DETACH DELETE(m)", D, True),
    # string literals: escapes and the other quote do not end them
    ('RETURN "a\\"b" AS x; MATCH (m:Memory) DETACH DELETE m', D, True),
    ("RETURN 'it\\'s' AS x; MATCH (m:Memory) DETACH DELETE m", D, True),
    ("RETURN \"it's\" AS x; MATCH (m:Memory) DETACH DELETE m", D, True),
    ("MATCH (m:Memory) WHERE m.content <> '\\\\' DETACH DELETE m", D, True),
    # numbers glued to keywords: the engine reads `1` then DELETE
    ("MATCH (m:Memory) WITH m LIMIT 1DETACH DELETE m", D, True),
    ("MATCH (m:Memory) WITH m, 1e1 AS x SET m.content = 'x'", D, True),
    # backticks: quoted names are names, unquoted keywords around them still count
    ("MATCH (`m`:`Memory`) DETACH DELETE `m`", D, True),
    # overwrites are destructive too
    ("MATCH (m:Memory) SET m.importance = 5", D, True),
    ("MATCH (m:Memory) REMOVE m.category", D, False),
    ("MERGE (m:Memory {id: 1}) ON MATCH SET m.content = 'overwritten'", D, True),
    ("MATCH (a:Memory {id: 1}) MERGE (b:Memory {id: 99}) "
     "ON CREATE SET b.content = 'new', a.content = 'overwritten'", D, True),
    ("MATCH (m:Memory)-[r:ABOUT]->() DELETE r", D, True),
    ("PROFILE MATCH (m:Memory) DETACH DELETE m", D, True),
    ("MATCH (m:Memory) WHERE EXISTS { MATCH (m)-[:ABOUT]->() } DETACH DELETE m", D, True),
    ("MATCH (m:Memory) UNWIND [1] AS x DETACH DELETE m", D, True),
    ("DROP TABLE ABOUT", F, True),
    ("ALTER TABLE Memory DROP category", F, True),
    ("EXPLAIN MATCH (m:Memory) DETACH DELETE m", D, False),
    ("COPY Memory FROM 'memories.csv'", F, False),
    ("COPY (MATCH (m:Memory) RETURN m.content) TO '/tmp/memnest-guard-out.csv'", F, False),
    ("EXPORT DATABASE '/tmp/memnest-guard-dump'", F, False),
    ("IMPORT DATABASE '/tmp/memnest-guard-dump'", F, False),
    ("LOAD FROM '/etc/passwd' RETURN *", F, False),
    ("LOAD WITH HEADERS (a STRING) FROM '/etc/hosts' RETURN *", F, False),
    ("COMMENT ON TABLE Memory IS 'gone'", D, False),
    # CALL: only procedures known to be read-only are reads
    ("CALL clear_warnings()", D, False),
    ("CALL project_graph('g', ['Memory'], [])", D, False),
    ("CALL drop_projected_graph('g')", D, False),
    ("CALL `show_tables`() RETURN *", D, False),
    ("CALL read_csv('/etc/passwd') RETURN *", F, False),
    ("CALL show_tables.x() RETURN *", D, False),
    # never run, whatever the settings: engine state, transactions, extensions
    ("CALL threads = 1", F, False),
    ("CALL timeout=0", F, False),
    ("BEGIN TRANSACTION", F, False),
    ("MATCH (m:Memory) RETURN m; COMMIT", F, False),
    ("rollback", F, False),
    ("CHECKPOINT", F, False),
    ("ATTACH '/tmp/other.lbug' AS other (dbtype lbug)", F, False),
    ("USE other", F, False),
    ("INSTALL fts", F, False),
    ("LOAD EXTENSION fts", F, False),
    ("load fts", F, False),
    ("UNINSTALL fts", F, False),
    # plain writes
    ("CREATE (m:Memory {id: 100, content: 'x'})", W, False),
    ("MERGE (t:Topic {name: 'x'})", W, False),
    ("CREATE NODE TABLE Note(id INT64 PRIMARY KEY)", F, False),
    ("RETURN nextval('seq')", W, False),
    # reads that must not trip the guard: keywords in strings, comments, names, identifiers
    ("MATCH (m:Memory) WHERE m.content CONTAINS 'DETACH DELETE' RETURN m.id", R, False),
    ('MATCH (m:Memory) WHERE m.content = "DROP TABLE Memory; SET x" RETURN m.id', R, False),
    ("MATCH (m:Memory) WHERE m.content STARTS WITH 'set ' RETURN m.content", R, False),
    ("MATCH (m:Memory) RETURN m.content AS deleted_at, m.category AS settings", R, False),
    ("MATCH (m:Memory) RETURN m.created_at AS `SET`, m.id AS `DETACH DELETE`", R, False),
    ("MATCH (m:Memory) WHERE m.workspace <> 'reset_all' RETURN m.updated_at AS dropped",
     R, False),
    ("// DETACH DELETE everything\nMATCH (m:Memory) RETURN count(m)", R, False),
    ("/* DROP TABLE Memory */ MATCH (m:Memory) RETURN count(m)", R, False),
    ("MATCH (m:Memory) RETURN count(m) // ; MATCH (n) DETACH DELETE n", R, False),
    ("RETURN 1 /* a **/ ; MATCH (m:Memory) DETACH DELETE m */", R, False),
    ("RETURN 'it\\'s DELETE time' AS x", R, False),
    ("UNWIND ['DELETE', \"DROP\", 'SET'] AS w RETURN w", R, False),
    ("MATCH (m:Memory) WHERE m.content <> 'a\\\\' RETURN m.id", R, False),
    ("CALL show_tables() RETURN *", R, False),
    ("call TABLE_INFO('Memory') return *", R, False),
    ("CALL show_connection('ABOUT') RETURN *", R, False),
    ("CALL current_setting('timeout') RETURN *", R, False),
    ("MATCH p = (a:Memory)-[:ABOUT*1..2]->(t) RETURN p", R, False),
    ("RETURN lower('DELETE ME') AS delete_me, list_concat(['set'], ['drop']) AS x", R, False),
    ("MATCH (m:Memory) RETURN m ORDER BY m.updated_at DESC LIMIT 5", R, False),
]

UNREADABLE = [
    "RETURN 'unterminated",
    "RETURN \"unterminated",
    "RETURN `unterminated",
    "RETURN 'bad \\q escape' ; MATCH (n) DETACH DELETE n",
]


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


# -- through the daemon ------------------------------------------------------------------------

def test_daemon_refuses_destructive_and_forbidden_queries(call):
    stored = call("memory_store", items=[{"content": "The deploy script lives in ops/"},
                                         {"content": "Releases are cut on Tuesdays",
                                          "tags": ["release"]}])
    ids = sorted(r["id"] for r in stored["results"])
    for query in [q for q, kind, _ in CORPUS if kind in (D, F)][::3]:
        with pytest.raises(ToolFailure) as refused:
            call("memory_query", cypher_query=query)
        assert refused.value.code == "permission_denied", (query, refused.value.message)
    for query in [q for q, kind, _ in CORPUS if kind == W]:
        with pytest.raises(ToolFailure) as refused:
            call("memory_query", cypher_query=query, read_only=True)
        assert refused.value.code == "permission_denied"
    for query in UNREADABLE:
        with pytest.raises(ToolFailure) as unreadable:
            call("memory_query", cypher_query=query)
        assert unreadable.value.code == "invalid_argument"
    listed = call("memory_list")
    assert sorted(m["id"] for m in listed["memories"]) == ids
    assert call("memory_stats")["index_health"]["healthy"]


def test_daemon_runs_reads_from_the_corpus(call):
    call("memory_store", content="Keep DETACH DELETE out of production scripts",
         tags=["safety"])
    for query in [q for q, kind, _ in CORPUS if kind == R]:
        out = call("memory_query", cypher_query=query, read_only=True)
        assert out["kind"] == "read"
    hit = call("memory_query", cypher_query="MATCH (m:Memory) WHERE m.content CONTAINS "
               "'DETACH DELETE' RETURN m.id AS id")
    assert hit["row_count"] == 1
