"""memory_query and memory_schema through the real daemon."""
import json
import threading
import time

import pytest

from memnest_shims.client import ToolFailure


def _fails(call, code, **arguments):
    with pytest.raises(ToolFailure) as failure:
        call("memory_query", **arguments)
    assert failure.value.code == code, failure.value.message
    assert "Traceback" not in failure.value.message
    return failure.value.message


@pytest.fixture
def seeded(call):
    stored = call("memory_store", items=[
        {"content": "The billing service retries failed webhooks three times",
         "tags": ["billing", "webhooks"], "importance": 4},
        {"content": "Webhook signatures use HMAC-SHA256", "tags": ["webhooks"]},
    ])
    first, second = (r["id"] for r in stored["results"])
    call("memory_relate", from_id=first, to_id=second, relationship="RELATED_TO")
    return first, second


def test_read_results_are_json_safe(call, seeded):
    first, second = seeded
    out = call("memory_query", cypher_query=(
        "MATCH (m:Memory)-[r:ABOUT]->(t:Topic) WHERE m.id = $id "
        "RETURN m, r, t, m.created_at AS created, m.embedding AS vec ORDER BY t.name"),
        params={"id": first})
    assert out["kind"] == "read" and out["row_count"] == 2 and not out["truncated"]
    row = out["rows"][0]
    node, rel, topic = row["m"], row["r"], row["t"]
    assert node["_label"] == "Memory" and node["id"] == first
    assert node["embedding"] == "[384 floats]" and row["vec"] == "[384 floats]"
    assert node["tags"] == ["billing", "webhooks"]
    assert rel["_label"] == "ABOUT" and rel["_src"] == node["_id"] and rel["_dst"] == topic["_id"]
    assert topic == {"_id": topic["_id"], "_label": "Topic", "name": "billing"}
    assert row["created"].startswith("20") and "T" in row["created"]

    path = call("memory_query", cypher_query=(
        "MATCH p = (a:Memory)-[:RELATED_TO*1..2]->(b:Memory) RETURN p, a.id AS a, b.id AS b"))
    assert path["row_count"] == 1
    p = path["rows"][0]["p"]
    assert [n["id"] for n in p["_nodes"]] == [first, second]
    assert p["_rels"][0]["_label"] == "RELATED_TO"
    assert p["_rels"][0]["_src"] == p["_nodes"][0]["_id"]

    values = call("memory_query", cypher_query=(
        "RETURN date('2024-02-29') AS d, interval('1 day 2 hours 3.5 seconds') AS span, "
        "CAST(1.25 AS DECIMAL(6, 2)) AS money, uuid('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11') "
        "AS u, BLOB('\\\\xAA\\\\xBB') AS b, 0.0 / 0.0 AS nan, {x: 1, y: [1.5]} AS s, "
        "map([1, 2], ['a', 'b']) AS m, CAST(12 AS INT128) AS big"))["rows"][0]
    assert values == {"d": "2024-02-29", "span": "P1DT2H3.5S", "money": 1.25,
                      "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "b": "aabb", "nan": "NaN",
                      "s": {"x": 1, "y": [1.5]}, "m": {"1": "a", "2": "b"}, "big": 12}

    full = call("memory_query", cypher_query="MATCH (m:Memory) WHERE m.id = $id "
                "RETURN m.embedding AS vec", params={"id": first}, full_vectors=True)
    vec = full["rows"][0]["vec"]
    assert len(vec) == 384 and all(isinstance(x, float) for x in vec)

    several = call("memory_query", cypher_query="RETURN 1 AS a; MATCH (m:Memory) "
                   "RETURN count(m) AS n")
    assert [s["rows"] for s in several["statements"]] == [[{"a": 1}], [{"n": 2}]]
    json.dumps(out), json.dumps(path), json.dumps(values)


def test_engine_errors_become_tool_errors(call, seeded):
    message = _fails(call, "invalid_argument", cypher_query="MATCH (m:Memory RETURN m")
    assert "Parser exception" in message
    assert "Binder exception" in _fails(call, "invalid_argument",
                                        cypher_query="MATCH (m:Memory) RETURN m.nope")
    _fails(call, "invalid_argument", cypher_query="RETURN $a; RETURN $a", params={"a": 1})
    _fails(call, "invalid_argument", cypher_query="  // nothing here\n")
    _fails(call, "invalid_argument", cypher_query="RETURN 1", max_rows=100000)
    # range() builds its list before the time limit can act: large literal ranges are refused
    message = _fails(call, "invalid_argument",
                     cypher_query="UNWIND range(1, 100000000) AS x RETURN count(x)")
    assert "range()" in message
    _fails(call, "invalid_argument", cypher_query="UNWIND range(1, $n) AS x RETURN count(x)",
           params={"n": 10**9})
    # the daemon is still fine
    assert call("memory_stats")["memories"] == 2


def test_create_is_indexed_and_searchable(call, seeded):
    schema = call("memory_schema")
    new_id = schema["next_memory_id"]
    out = call("memory_query", cypher_query=(
        "CREATE (m:Memory {id: $id, content: $content, tags: ['Infra', 'staging'], "
        "importance: 4})"),
        params={"id": new_id, "content": "The staging database listens on port 6543"})
    assert out["kind"] == "write"
    assert out["memories_indexed"] == [new_id]
    assert out["changes"]["Memory"] == 1 and out["changes"]["ABOUT"] == 2

    listed = call("memory_list")
    assert new_id in [m["id"] for m in listed["memories"]]
    found = call("memory_search", query="which port does the staging database use")
    assert found["results"][0]["id"] == new_id
    got = call("memory_get", id=new_id)
    assert got["tags"] == ["infra", "staging"] and got["category"] == "general"
    assert got["importance"] == 4 and got["created_at"]
    health = call("memory_stats")["index_health"]
    assert health["healthy"], health
    # the next memory_store does not reuse the id
    again = call("memory_store", content="Staging deploys need a green CI run")
    assert again["id"] > new_id

    # MERGE of an existing topic adds nothing and passes the audit
    merged = call("memory_query", cypher_query="MERGE (t:Topic {name: 'billing'}) RETURN t.name")
    assert merged["rows"] == [{"t.name": "billing"}] and merged["changes"] == {}


def test_bad_creates_are_rolled_back(call, seeded):
    first, second = seeded
    next_id = call("memory_schema")["next_memory_id"]
    message = _fails(call, "invalid_argument",
                     cypher_query=f"CREATE (m:Memory {{id: {next_id}}})")
    assert "content" in message
    call("memory_delete", id=second)
    message = _fails(call, "invalid_argument",
                     cypher_query=f"CREATE (m:Memory {{id: {second}, content: 'reuse'}})")
    assert "never reused" in message
    _fails(call, "invalid_argument", cypher_query="CREATE (m:Memory {content: 'no id'})")
    count = call("memory_query", cypher_query="MATCH (m:Memory) RETURN count(m) AS n")
    assert count["rows"] == [{"n": 1}]
    assert call("memory_stats")["index_health"]["healthy"]


def test_read_only_and_destructive_refusals(call, seeded):
    message = _fails(call, "permission_denied", read_only=True,
                     cypher_query="CREATE (m:Memory {id: 999, content: 'x'})")
    assert "read_only" in message
    message = _fails(call, "permission_denied",
                     cypher_query="MATCH (m:Memory)\nDETACH\nDELETE\nm;")
    assert "MEMORY_ALLOW_DESTRUCTIVE" in message and "memory_delete" in message
    _fails(call, "permission_denied", cypher_query="MATCH (m:Memory) SET m.importance = 1")
    _fails(call, "permission_denied", cypher_query="BEGIN TRANSACTION")
    assert call("memory_stats")["memories"] == 2


def test_schema_lists_tables_columns_and_indexes(call, seeded):
    schema = call("memory_schema")
    tables = {t["name"]: t for t in schema["tables"]}
    assert {"Memory", "Topic", "ABOUT", "RELATED_TO"} <= set(tables)
    memory = tables["Memory"]
    assert memory["type"] == "node" and memory["primary_key"] == "id" and memory["rows"] == 2
    columns = {c["name"]: c["type"] for c in memory["columns"]}
    assert columns["id"] == "INT64" and columns["content"] == "STRING"
    assert columns["tags"] == "STRING[]" and columns["embedding"] == "FLOAT[384]"
    assert "workspace" in columns
    assert tables["ABOUT"]["from"] == "Memory" and tables["ABOUT"]["to"] == "Topic"
    assert tables["ABOUT"]["rows"] == 3
    assert tables["RELATED_TO"]["from"] == "Memory" and tables["RELATED_TO"]["to"] == "Memory"
    assert tables["RELATED_TO"]["rows"] == 1
    assert tables["Topic"]["rows"] == 2
    daemon = {i["name"]: i for i in schema["indexes"]["daemon"]}
    assert daemon["vector"]["entries"] == 2 and daemon["vector"]["dimensions"] == 384
    assert daemon["keyword"]["entries"] == 2
    assert isinstance(schema["indexes"]["database"], list)
    assert schema["memories_in_workspace"] == 2 and schema["next_memory_id"] > max(seeded)


def test_destructive_queries_with_permission_time_limit_and_row_cap(fresh_daemon, workspace):
    # the time limit: long enough for the calls below to be answered while a runaway query
    # runs into it, on a busy machine as well
    fresh_daemon.env.update({"MEMORY_ALLOW_DESTRUCTIVE": "true", "MEMORY_QUERY_TIMEOUT_S": "5",
                             "MEMORY_QUERY_MAX_ROWS": "50"})
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)

    def call(tool, **arguments):
        return client.call_tool(tool, arguments, str(workspace))

    stored = call("memory_store", items=[
        {"content": "Feature flags are stored in LaunchDarkly", "tags": ["flags"]},
        {"content": "The cache TTL for sessions is 15 minutes", "tags": ["cache"]},
        {"content": "On-call rotation changes every Monday", "tags": ["oncall"]},
    ])
    a, b, c = (r["id"] for r in stored["results"])
    call("memory_keep_separate", memory_ids=[a, b])

    # overwrite: re-embedded, so search follows the new text
    out = call("memory_query", cypher_query="MATCH (m:Memory) WHERE m.id = $id "
               "SET m.content = 'The cache TTL for sessions is 45 minutes'", params={"id": b})
    assert out["kind"] == "destructive" and out["memories_indexed"] == [b]
    hit = call("memory_search", query="session cache TTL 45 minutes")["results"][0]
    assert hit["id"] == b and "45" in hit["content"]

    # row cap and the ceiling on max_rows
    capped = call("memory_query", cypher_query="UNWIND range(1, 500) AS x RETURN x")
    assert capped["row_count"] == 50 and capped["total_rows"] == 500 and capped["truncated"]
    assert call("memory_query", cypher_query="UNWIND range(1, 500) AS x RETURN x",
                max_rows=7)["row_count"] == 7
    with pytest.raises(ToolFailure):
        call("memory_query", cypher_query="RETURN 1", max_rows=51)

    # a runaway read is stopped by the time limit; calls on this workspace wait for it (the
    # query holds the database in its own process), calls on another do not
    other = workspace.parent / "other"
    other.mkdir()
    client.call_tool("memory_store", {"content": "Feature flags live in the config repo"},
                     str(other))
    runaway = {}

    def run():
        try:
            call("memory_query", cypher_query=(
                "UNWIND range(1, 300) AS p UNWIND range(1, 300) AS q UNWIND range(1, 300) AS r "
                "UNWIND range(1, 300) AS s RETURN sum(p * q + r * s) AS total"))
        except ToolFailure as exc:
            runaway["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 60
    while not client.status().calls_in_flight:  # the runaway is running
        assert time.monotonic() < deadline and worker.is_alive(), runaway
        time.sleep(0.05)
    for _ in range(3):
        assert client.call_tool("memory_search", {"query": "feature flags"},
                                str(other))["results"]
    # answered while the runaway still runs: they did not wait for it
    assert worker.is_alive(), "the runaway query ended before the calls on another workspace"
    assert call("memory_query", cypher_query="MATCH (m:Memory) RETURN count(m) AS n",
                read_only=True)["rows"] == [{"n": 3}]
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert runaway["error"].code == "query_error"
    # stopped by the engine at the time limit (not killed after the margin past it)
    assert "ran past the time limit of 5 s" in runaway["error"].message, \
        runaway["error"].message
    # a write after it finds the store healthy
    assert call("memory_store", content="Dashboards live in Grafana")["status"] == "stored"

    # DETACH DELETE of everything: indexes, topics and verdicts follow
    gone = call("memory_query", cypher_query="MATCH (m:Memory)\nDETACH\nDELETE\nm;")
    assert gone["changes"]["Memory"] == -4 and len(gone["memories_removed"]) == 4
    stats = call("memory_stats")
    assert stats["memories"] == 0 and stats["index_health"]["healthy"], stats
    left = call("memory_query", cypher_query="MATCH (t:Topic) RETURN count(t) AS topics")
    assert left["rows"] == [{"topics": 0}]
    verdicts = call("memory_query", cypher_query="MATCH (v:SeparateVerdict) RETURN count(v) AS n")
    assert verdicts["rows"] == [{"n": 0}]
    assert call("memory_search", query="feature flags")["results"] == []
    # transaction control stays refused even with destructive queries allowed
    with pytest.raises(ToolFailure) as refused:
        call("memory_query", cypher_query="MATCH (m:Memory) RETURN m; COMMIT")
    assert refused.value.code == "permission_denied"
    client.close()


def test_write_audit_sees_what_a_plain_write_must_not_do():
    """The second line of defence behind the lexical guard: a query that passed as a plain
    write is rolled back if it removed or changed anything that existed."""
    import ladybug as lb

    from memnest_daemon.cypher.run import census as _census, losses as _losses

    class Rows:
        def __init__(self, conn):
            self.conn = conn

        def rows(self, query, params=None):
            return self.conn.execute(query, params or {}).get_all()

    cases = [
        ("CREATE (:Memory {id: 3, content: 'new', tags: ['x']})", []),
        ("MERGE (:Topic {name: 't'})", []),
        ("CREATE NODE TABLE Note(id INT64 PRIMARY KEY)", []),
        ("MATCH (m:Memory) WHERE m.id = 1 SET m.tags = ['changed']", ["changes 1 existing Memory"]),
        ("MATCH (m:Memory) WHERE m.id = 2 DETACH DELETE m", ["removes 1 existing Memory row(s) (2)"]),
        ("MATCH ()-[r:ABOUT]->() DELETE r", ["removes 1 row(s) from ABOUT"]),
        ("DROP TABLE ABOUT", ["drops table ABOUT"]),
        ("ALTER TABLE Memory DROP tags", ["changes columns of Memory (tags)"]),
    ]
    for query, expected in cases:
        db = lb.Database(":memory:")
        conn = lb.Connection(db)
        for statement in [
            "CREATE NODE TABLE Memory(id INT64 PRIMARY KEY, content STRING, tags STRING[])",
            "CREATE NODE TABLE Topic(name STRING PRIMARY KEY)",
            "CREATE REL TABLE ABOUT(FROM Memory TO Topic)",
            "CREATE (:Memory {id: 1, content: 'one', tags: ['t']})",
            "CREATE (:Memory {id: 2, content: 'two'})",
            "CREATE (:Topic {name: 't'})",
            "MATCH (m:Memory), (t:Topic) WHERE m.id = 1 CREATE (m)-[:ABOUT]->(t)",
        ]:
            conn.execute(statement)
        before = _census(Rows(conn), fingerprint=True)
        conn.execute(query)
        losses = _losses(before, _census(Rows(conn), fingerprint=True))
        assert len(losses) == len(expected), (query, losses)
        for found, wanted in zip(losses, expected):
            assert found.startswith(wanted), (query, losses)
        conn.close()
        db.close()
