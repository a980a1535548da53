"""Every memory records how it was written (an agent's tool call, the CLI, an import, a raw
query), by which client and in which of its sessions; memory_get shows it, memory_search and
memory_list filter on it, and it survives a restart. What a caller claims is bounded: it
cannot pose as an import or a query, nor write an unbounded or unprintable label."""
import gzip
import json
import shutil
import subprocess

import anyio
import numpy as np
from mcp.client.session import DEFAULT_CLIENT_INFO

from support import BIN, result_json
from memnest_daemon.core.records import Origin
from memnest_daemon.store.changes import Changes
from memnest_daemon.store.store import MemoryStore
from memnest_proto import memnest_pb2 as pb

DATA = __import__("pathlib").Path(__file__).parent / "data"


def _store_everywhere(d, workspace) -> dict[str, int]:
    """One memory through each write path; their ids by path."""
    ids = {}

    async def by_agent():
        async with d.mcp(workspace) as s:
            stored = result_json(await s.call_tool("memory_store", {
                "content": "The release train leaves every second Thursday"}))
            ids["agent"] = stored["id"]
    anyio.run(by_agent)

    out = subprocess.run([str(BIN / "memnest-ctl"), "store", "--workspace", str(workspace),
                          "The staging cluster lives in eu-west-2"], env=d.env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ids["cli"] = int(out.stdout.split("memory ")[1].split()[0])

    export = workspace / "in.json"
    export.write_text(json.dumps({"format": "memnest-export", "version": 1, "memories": [
        {"key": "a", "content": "Imported: the API gateway caches for 30 seconds"}]}))
    client = d.client()
    imported = client.call_tool("memory_import", {"path": "in.json"}, str(workspace))
    assert imported["memories"]["stored"] == 1
    listed = client.call_tool("memory_list", {"limit": 10}, str(workspace))["memories"]
    ids["import"] = next(m["id"] for m in listed if m["content"].startswith("Imported"))

    next_id = client.call_tool("memory_schema", {}, str(workspace))["next_memory_id"]
    client.call_tool("memory_query", {
        "cypher_query": "CREATE (m:Memory {id: $id, content: 'Written by hand in Cypher'})",
        "params": {"id": next_id}}, str(workspace))
    ids["query"] = next_id
    client.close()
    return ids


def test_each_write_path_records_its_origin_across_a_restart(fresh_daemon, workspace):
    fresh_daemon.start()
    ids = _store_everywhere(fresh_daemon, workspace)
    fresh_daemon.stop()
    fresh_daemon.start()
    client = fresh_daemon.client()
    got = client.call_tool("memory_get", {"ids": list(ids.values())}, str(workspace))
    origin = {m["id"]: m.get("origin", {}) for m in got["memories"]}
    assert origin[ids["agent"]]["via"] == "agent"
    assert origin[ids["agent"]]["client"] == DEFAULT_CLIENT_INFO.name
    assert len(origin[ids["agent"]]["session"]) == 16
    assert origin[ids["cli"]] == {"via": "cli", "client": "memnest-ctl", "session": ""}
    assert origin[ids["import"]]["via"] == "import"
    assert origin[ids["query"]]["via"] == "query"
    for via, memory_id in ids.items():
        listed = client.call_tool("memory_list", {"via": via}, str(workspace))["memories"]
        assert [m["id"] for m in listed] == [memory_id], via
    found = client.call_tool("memory_search", {"query": "staging cluster", "via": "agent"},
                             str(workspace))["results"]
    assert [r["id"] for r in found] == [ids["agent"]]
    by_client = client.call_tool("memory_list", {"client": "memnest-ctl"},
                                 str(workspace))["memories"]
    assert [m["id"] for m in by_client] == [ids["cli"]]
    client.close()


def test_a_caller_cannot_forge_or_flood_its_origin(daemon, workspace):
    client = daemon.client()
    stub = client._connect()  # the raw request, as a hostile local program would send it
    request = pb.CallToolRequest(
        tool="memory_store", workspace=str(workspace),
        arguments_json=json.dumps({"content": "A fact from a program that lies about itself"}),
        origin=pb.Origin(via="import", client="x\x1b[31m" + "y" * 10_000,
                         session="\x00\n" * 5000))
    reply = stub.CallTool(request, timeout=60)
    stored = json.loads(reply.result_json)
    got = client.call_tool("memory_get", {"ids": [stored["id"]]}, str(workspace))
    origin = got["memories"][0]["origin"]
    assert origin["via"] == ""  # a client cannot say it is an import
    assert origin["client"].startswith("x[31m") and len(origin["client"]) == 200
    assert origin["session"] == ""
    client.close()


def test_a_database_from_before_provenance_opens_and_keeps_it_afterwards(tmp_path):
    path = tmp_path / "memory.lbug"
    with gzip.open(DATA / "real_ladybug_0.15.3_shifted_tags.lbug.gz") as src, \
            open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)

    def embed(texts):  # any unit vectors: this test is about the rows
        return np.stack([np.eye(384, dtype=np.float32)[len(t) % 384] for t in texts])
    store = MemoryStore(str(path), "memnest/all-MiniLM-L6-v2-int8", 384, 64, 1,
                        embed=embed)
    try:
        assert all("origin" not in m.view() for m in store.catalog.values())
        old = store.catalog[1].copy(origin_via="cli", origin_client="memnest-ctl")
        with store.writing():
            store.commit(Changes().update(old))
    finally:
        store.close()
    again = MemoryStore(str(path), "memnest/all-MiniLM-L6-v2-int8", 384, 64, 1,
                        embed=embed)
    try:
        assert again.catalog[1].view()["origin"] == {"via": "cli", "client": "memnest-ctl",
                                                     "session": ""}
        assert Origin.claimed("query", "c", "s").via == ""
    finally:
        again.close()
