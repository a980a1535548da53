"""memory_query in its default mode, as a prompt-injected agent would use it: no query may
kill the daemon, reach a file, change the schema, or write what a tool could not."""
import os
import subprocess
import sys
import textwrap

import pytest

from memnest_shims.client import ToolFailure


def _refused(call, code, **arguments) -> str:
    with pytest.raises(ToolFailure) as failure:
        call("memory_query", **arguments)
    assert failure.value.code == code, failure.value
    return failure.value.message


def _alive(daemon, pid_before, call):
    assert daemon.client().status().pid == pid_before
    assert call("memory_search", query="tenant cache key")["results"]


@pytest.fixture
def stored(call):
    call("memory_store", content="The cache key includes the tenant id", tags=["cache"])
    return call("memory_schema")["next_memory_id"]


@pytest.mark.parametrize("query", [
    "RETURN size(range(1, 100000000 + 1)) AS n",
    "WITH 300000000 AS n RETURN size(range(1, n)) AS n",
    "WITH range(1, 100000) AS a " + " ".join(["WITH list_concat(a, a) AS a"] * 16)
    + " RETURN size(a) AS n",
    "WITH 2000000000 AS n RETURN size(repeat('x', n)) AS n",
    "RETURN size(list_transform(range(1, 5000), x -> range(1, 100000))) AS n",
])
def test_a_query_that_allocates_without_bound_does_not_kill_the_daemon(daemon, call, stored,
                                                                      query):
    pid = daemon.client().status().pid
    message = _refused(call, "query_error", cypher_query=query, read_only=True)
    assert "memory" in message or "time limit" in message, message
    _alive(daemon, pid, call)
    assert call("memory_query", cypher_query="MATCH (m:Memory) RETURN count(m) AS n",
                read_only=True)["rows"] == [{"n": 1}]


def test_no_schema_change_and_no_file_is_ever_reached(call, stored, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    for query in (
            f"CREATE NODE TABLE P(id INT64 PRIMARY KEY, s STRING) WITH (storage='{outside}/x')",
            "CREATE GRAPH g1",
            f"CREATE GRAPH `../../{outside.name}/escaped`",
            "CREATE REL TABLE Hack(FROM Memory TO Memory)",
            "DROP TABLE ABOUT",
            "ALTER TABLE Memory ADD extra STRING",
            f"COPY (MATCH (m:Memory) RETURN m.content) TO '{outside}/dump.csv'",
            "LOAD FROM '/etc/passwd' RETURN *",
            "CALL read_csv('/etc/passwd') RETURN *",
            "CREATE OR REPLACE MACRO m(x) AS x"):
        message = _refused(call, "permission_denied", cypher_query=query)
        assert "never runs" in message, (query, message)
    assert list(outside.iterdir()) == []
    tables = {t["name"] for t in call("memory_schema")["tables"]}
    assert "P" not in tables and "Hack" not in tables
    assert call("memory_search", query="tenant cache key")["results"]


def test_writes_obey_the_tools_limits(call, stored):
    for memory_id in (9223372036854775807, 400000000, 0, -5, stored + 600):
        message = _refused(call, "invalid_argument",
                           cypher_query="CREATE (:Memory {id: $id, content: 'planted'})",
                           params={"id": memory_id})
        assert "outside" in message
    message = _refused(call, "permission_denied",
                       cypher_query="CREATE (:GraphSignal {id: 1, pagerank: 1e300, "
                                    "community: 1})")
    assert "GraphSignal" in message
    _refused(call, "permission_denied",
             cypher_query="MERGE (k:Meta {key: 'next_id_hint'}) RETURN k.key")
    big = "x" * (10 * 1024 * 1024)
    message = _refused(call, "invalid_argument",
                       cypher_query="CREATE (:Memory {id: $id, content: $c})",
                       params={"id": stored, "c": big})
    assert "MEMORY_MAX_STORE_CHARS" in message
    message = _refused(call, "invalid_argument",
                       cypher_query="UNWIND range(0, 2999) AS i "
                                    "CREATE (:Memory {id: $id + i, content: 'n' + string(i)})",
                       params={"id": stored})
    assert "MEMORY_MAX_BATCH" in message or "outside" in message
    assert call("memory_list")["total"] == 1
    made = call("memory_query", cypher_query="CREATE (:Memory {id: $id, content: $c, "
                "importance: 9, access_count: 99999999999})",
                params={"id": stored, "c": "Made by a query"})
    assert made["memories_indexed"] == [stored]
    got = call("memory_get", id=stored)
    assert got["importance"] == 5 and got["access_count"] <= 1_000_001  # clamped, then read
    assert call("memory_verify")["healthy"]


def test_a_workspace_an_old_query_damaged_opens_again(fresh_daemon, workspace):
    """Rows with ids no tool gives (written before writes were checked) used to break the
    workspace for good, or run every open out of memory: they are left out and reported."""
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    kept = client.call_tool("memory_store", {"content": "Releases are cut on Tuesdays"},
                            str(workspace))
    fresh_daemon.stop()
    path = workspace / ".memnest" / "memory.lbug"
    subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import ladybug as lb
        c = lb.Connection(lb.Database({str(path)!r}))
        for i in (9223372036854775807, 400000000):
            c.execute("CREATE (:Memory {{id: $i, content: 'planted', workspace: $w}})",
                      {{"i": i, "w": {str(workspace)!r}}})
        c.execute("MERGE (k:Meta {{key: 'next_id'}}) SET k.value = '400000001'")
    """)], check=True)
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        listed = client.call_tool("memory_list", {}, str(workspace))
        assert [m["id"] for m in listed["memories"]] == [kept["id"]]
        new = client.call_tool("memory_store", {"content": "Hotfixes go to the release branch"},
                               str(workspace))
        assert new["id"] == kept["id"] + 1
        report = client.call_tool("memory_verify", {}, str(workspace))
        assert report["findings"]["by_kind"] == {"id_out_of_range": 2}
    finally:
        client.close()
    assert "not served" in fresh_daemon.log.read_text()
    os.sync()
