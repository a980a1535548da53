"""The corpus of memory_query bypass attempts, each with the verdict the guard must give
(daemon/cypher/guard.py): tests/daemon/cypher/test_guard.py checks it against the classifier
and the real engine, tests/reliability/test_cypher_corpus.py through the daemon."""
from memnest_daemon.cypher import guard

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
