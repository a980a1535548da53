"""memory_export and memory_import through the real daemon: a faithful round trip, idempotent
re-import, dedup against what a workspace already holds, path rules, and strict reading."""
import json
import os
import stat
from pathlib import Path

import pytest

from memnest_shims.client import ToolFailure

NOTES = [
    ("The API gateway times out after 30 seconds", "decision", ["api", "timeouts"], 4),
    ("The API gateway now times out after 60 seconds", "decision", ["api", "timeouts"], 5),
    ("Long report queries need more than 30 seconds to finish", "learning", ["reports"], 3),
    ("p95 latency of the search endpoint is 500ms", "learning", ["latency", "search"], 3),
    ("p95 latency of the search endpoint is 900ms", "learning", ["latency", "search"], 3),
    ("Use ruff for linting and formatting Python code", "preference", ["python", "tooling"], 2),
    ("Database migrations run with alembic before each deploy", "pattern", ["deploy"], 4),
    ("The staging cluster runs in eu-west-1", "general", [], 1),
    ("A memory with markup <script>alert(1)</script> & \u2028 odd text", "general", ["odd"], 2),
]
QUERIES = ["gateway timeout", "search latency", "how do we lint python", "deploy migrations"]


def _contents(call, ws=None) -> dict[str, dict]:
    listed = call("memory_list", ws, limit=500, preview_chars=100000)
    assert listed["has_more"] is False
    return {m["content"]: m for m in listed["memories"]}


def _comparable(m: dict) -> tuple:
    return (m["category"], tuple(sorted(m["tags"])), m["importance"], m["access_count"],
            m["created_at"], m["updated_at"])


def _graph(call, ws, by_id: dict[int, str]) -> tuple[set, set]:
    """Links and keep-separate verdicts, named by content (ids differ between workspaces)."""
    got = call("memory_get", ws, ids=list(by_id))
    edges, separate = set(), set()
    for m in got["memories"]:
        for e in m["edges"]:
            edges.add((e["type"], by_id[e["from_id"]], by_id[e["to_id"]]))
        for other in m.get("kept_separate_from", []):
            separate.add(frozenset((by_id[m["id"]], by_id[other])))
    return edges, separate


def _top(call, ws, query: str) -> list[str]:
    return [r["content"] for r in call("memory_search", ws, query=query, top_k=3)["results"]]


@pytest.fixture
def source(call, workspace):
    """A workspace with memories, every kind of link, a verdict and some access history."""
    stored = call("memory_store", items=[{"content": c, "category": cat, "tags": t,
                                          "importance": i} for c, cat, t, i in NOTES])
    ids = [r["id"] for r in stored["results"]]
    assert stored["stored"] == len(NOTES)
    call("memory_relate", relations=[
        {"from_id": ids[1], "to_id": ids[0], "relationship": "SUPERSEDES"},
        {"from_id": ids[2], "to_id": ids[0], "relationship": "EXPLAINS"},
        {"from_id": ids[6], "to_id": ids[7]},
        {"from_id": ids[5], "to_id": ids[6], "relationship": "RELATED_TO"},
    ])
    call("memory_keep_separate", pairs=[[ids[4], ids[3]]])
    call("memory_get", ids=[ids[5], ids[7]])  # access counts to carry over
    call("memory_get", id=ids[5])
    return ids


def test_round_trip_restores_memories_links_verdicts_and_search(call, source, workspace,
                                                               tmp_path):
    before = _contents(call)
    exported = call("memory_export")
    path = Path(exported["path"])
    assert path.parent == workspace / ".memnest" / "exports" and path.name.endswith(".json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert exported["memories"] == len(NOTES) and exported["edges"] == 4
    assert exported["keep_separate"] == 1
    text = path.read_text(encoding="utf-8")
    assert str(workspace) not in text and str(tmp_path) not in text
    doc = json.loads(text)
    assert doc["format"] == "memnest-export" and doc["version"] == 1
    assert "embedding" not in doc["memories"][0]
    assert {m["embedding_model"] for m in doc["memories"]} == {doc["embedding_model"]}

    target = tmp_path / "restored"
    target.mkdir()
    imported = call("memory_import", target, path=str(path))
    assert imported["memories"] == {"in_file": len(NOTES), "stored": len(NOTES),
                                    "duplicate": 0, "merged": 0}
    assert imported["edges"] == {"in_file": 4, "created": 4, "exists": 0, "skipped": 0}
    assert imported["keep_separate"] == {"in_file": 1, "recorded": 1, "exists": 0,
                                         "skipped": 0}

    after = _contents(call, target)
    assert set(after) == set(before)
    for content, m in before.items():
        assert _comparable(after[content]) == _comparable(m), content
    # Search ranks the restored memories as it ranked the originals (before any access
    # counting by memory_get below makes the two workspaces differ).
    for query in QUERIES:
        assert _top(call, target, query) == _top(call, None, query), query

    source_graph = _graph(call, None, {m["id"]: c for c, m in before.items()})
    target_graph = _graph(call, target, {m["id"]: c for c, m in after.items()})
    assert target_graph == source_graph
    assert len(source_graph[0]) == 4 and len(source_graph[1]) == 1

    # A second import of the same file changes nothing at all.
    snapshot = _contents(call, target)
    again = call("memory_import", target, path=str(path))
    assert again["memories"]["stored"] == 0 and again["existing_changed"] == 0
    assert again["memories"]["duplicate"] == len(NOTES)
    assert again["edges"] == {"in_file": 4, "created": 0, "exists": 4, "skipped": 0}
    assert again["keep_separate"]["recorded"] == 0 and again["keep_separate"]["exists"] == 1
    assert _contents(call, target) == snapshot


def test_import_dedups_against_existing_memories_and_stays_idempotent(call, workspace,
                                                                     tmp_path):
    near_a = ("The deploy script lives in tools/deploy.sh and runs on every merge to the "
              "main branch")
    near_b = ("The deploy script lives in tools/deploy.sh and it runs on every single merge "
              "to the main branch")
    doc = {"format": "memnest-export", "version": 1, "memories": [
        {"key": "a", "content": near_a, "tags": ["deploy"], "importance": 3},
        {"key": "b", "content": near_b, "tags": ["deploy", "ci"], "importance": 2},
        {"key": "c", "content": "Release notes are written by hand", "tags": ["release"]},
    ], "edges": [{"type": "RELATED_TO", "from": "a", "to": "b"},
                 {"type": "EXPLAINS", "from": "c", "to": "a"}],
        "keep_separate": [["a", "b"]]}
    path = tmp_path / "handmade.json"
    path.write_text(json.dumps(doc))

    # Into an empty workspace the file's memories stay distinct, even the two look-alikes.
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    first = call("memory_import", fresh, path=str(path))
    assert first["memories"]["stored"] == 3
    assert first["edges"]["created"] == 2 and first["keep_separate"]["recorded"] == 1

    # Into a workspace that already holds `a`: `a` is a duplicate, `b` merges into it (so the
    # a-b link and verdict would join a memory to itself and are skipped), `c` is new.
    existing = call("memory_store", content=near_a, tags=["deploy"], importance=3)["id"]
    result = call("memory_import", path=str(path))
    assert result["memories"] == {"in_file": 3, "stored": 1, "duplicate": 1, "merged": 1}
    assert result["existing_changed"] == 1  # `b` brought its tag and longer wording
    assert result["edges"] == {"in_file": 2, "created": 1, "exists": 0, "skipped": 1}
    assert result["keep_separate"]["skipped"] == 1
    memories = _contents(call)
    assert len(memories) == 2 and near_a not in memories
    merged = memories[near_b]
    assert merged["id"] == existing and set(merged["tags"]) == {"deploy", "ci"}

    snapshot = _contents(call)
    again = call("memory_import", path=str(path))
    assert again["memories"]["stored"] == 0 and again["existing_changed"] == 0
    assert again["edges"]["created"] == 0 and again["edges"]["exists"] == 1
    assert _contents(call) == snapshot


def test_large_import_reports_progress(daemon, call, workspace, tmp_path):
    services = ["billing", "search", "auth", "mailer", "export", "reports", "uploads"]
    rows = [{"key": f"k{n}", "content": f"The {services[n % 7]} worker number {n} listens on "
                                        f"port {8000 + n} in the staging cluster",
             "tags": [services[n % 7]]} for n in range(260)]
    path = workspace / "big.json"
    path.write_text(json.dumps({"format": "memnest-export", "version": 1, "memories": rows}))
    seen, dones = [], []
    client = daemon.client()
    try:
        result = client.call_tool("memory_import", {"path": "big.json"}, str(workspace),
                                  on_progress=lambda done, total, msg: seen.append(msg)
                                  or dones.append(done))
        assert result["memories"]["stored"] == 260
        assert seen == ["imported 200 of 260 memories", "imported 260 of 260 memories",
                        "checked the conflict pairs of 260 of 260 memories"]
        assert dones == sorted(set(dones))  # progress only goes forward
        seen.clear()
        again = client.call_tool("memory_import", {"path": "big.json"}, str(workspace),
                                 on_progress=lambda done, total, msg: seen.append(msg))
        assert again["memories"]["duplicate"] == 260 and again["memories"]["stored"] == 0
    finally:
        client.close()
    assert call("memory_list", limit=1)["total"] == 260


def test_paths_may_not_leave_the_workspace(call, source, workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    with pytest.raises(ToolFailure) as up:
        call("memory_export", path="../x.json")
    assert up.value.code == "invalid_argument" and ".." in up.value.message
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(ToolFailure):
        call("memory_export", path="notes/../../x.json")
    with pytest.raises(ToolFailure):
        call("memory_import", path="../x.json")

    # A link planted in .memnest is never followed, whether a directory or the file itself.
    exports = workspace / ".memnest" / "exports"
    exports.parent.mkdir(exist_ok=True)
    exports.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ToolFailure) as linked:
        call("memory_export")
    assert "symbolic link" in linked.value.message
    assert list(outside.iterdir()) == []
    victim = outside / "victim.json"
    victim.write_text("do not touch")
    (workspace / ".memnest" / "planted.json").symlink_to(victim)
    for tool in ("memory_export", "memory_graph_html"):
        with pytest.raises(ToolFailure) as planted:
            call(tool, path=".memnest/planted.json")
        assert "symbolic link" in planted.value.message
    assert victim.read_text() == "do not touch"
    with pytest.raises(ToolFailure) as read_link:
        call("memory_import", path=".memnest/planted.json")
    assert "symbolic link" in read_link.value.message
    with pytest.raises(ToolFailure):  # an absolute path into the workspace follows the rules
        call("memory_export", path=str(workspace / ".memnest" / "planted.json"))

    # A file that is not an earlier export is never overwritten.
    (workspace / ".memnest" / "notes.txt").write_text("my notes\n")
    with pytest.raises(ToolFailure) as clobber:
        call("memory_export", path=".memnest/notes.txt")
    assert "not a memory export" in clobber.value.message
    assert (workspace / ".memnest" / "notes.txt").read_text() == "my notes\n"

    # Files are written only under .memnest/: not elsewhere in the workspace, not outside.
    (workspace / "README.md").write_text("# my project\n")
    for path in ("README.md", "backups/today.json", str(outside / "backup.json"),
                 str(workspace / "x.json")):
        with pytest.raises(ToolFailure) as confined:
            call("memory_export", path=path)
        assert confined.value.code == "permission_denied", path
        assert ".memnest" in confined.value.message
    assert list(outside.iterdir()) == [victim] and not (workspace / "backups").exists()
    assert (workspace / "README.md").read_text() == "# my project\n"
    nested = call("memory_export", path=".memnest/backups/today.json")
    assert Path(nested["path"]) == workspace / ".memnest" / "backups" / "today.json"
    again = call("memory_export", path=".memnest/backups/today.json")  # replaces its own file
    assert again["path"] == nested["path"]
    assert list((workspace / ".memnest" / "backups").glob(".*.tmp")) == []


def test_workspace_paths_only_when_asked(call, source, workspace):
    with_paths = call("memory_export", path=".memnest/with.json", include_workspace_paths=True)
    doc = json.loads(Path(with_paths["path"]).read_text())
    assert doc["workspace"] == str(workspace)
    assert {m["workspace"] for m in doc["memories"]} == {str(workspace)}
    without = call("memory_export", path=".memnest/without.json")
    assert str(workspace) not in Path(without["path"]).read_text()


def _valid() -> dict:
    return {"format": "memnest-export", "version": 1,
            "counts": {"memories": 2, "edges": 1, "keep_separate": 0},
            "memories": [{"key": "m1", "content": "first memory about caching"},
                         {"key": "m2", "content": "second memory about queues"}],
            "edges": [{"type": "RELATED_TO", "from": "m1", "to": "m2"}]}


def _edit(change) -> str:
    doc = _valid()
    change(doc)
    return json.dumps(doc)


MALFORMED = {
    "not-json": ("{this is not json", "not valid JSON"),
    "not-utf8": (b"\xff\xfe{}", "not UTF-8"),
    "array": ("[1, 2]", "format"),
    "other-format": (_edit(lambda d: d.update(format="something-else")), "format"),
    "newer-version": (_edit(lambda d: d.update(version=2)), "newer memnest"),
    "string-version": (_edit(lambda d: d.update(version="1")), "version"),
    "no-content": (_edit(lambda d: d["memories"][0].pop("content")), "content"),
    "empty-content": (_edit(lambda d: d["memories"][0].update(content="   ")), "empty"),
    "bad-category": (_edit(lambda d: d["memories"][0].update(category="gossip")), "gossip"),
    "bad-importance": (_edit(lambda d: d["memories"][0].update(importance=9)), "importance"),
    "bad-time": (_edit(lambda d: d["memories"][0].update(created_at="yesterday")), "ISO 8601"),
    "unknown-field": (_edit(lambda d: d["memories"][0].update(embedding=[0.1])), "embedding"),
    "duplicate-key": (_edit(lambda d: d["memories"][1].update(key="m1")), "twice"),
    "dangling-edge": (_edit(lambda d: d["edges"][0].update(to="m9")), "m9"),
    "self-edge": (_edit(lambda d: d["edges"][0].update(to="m1")), "itself"),
    "bad-relation": (_edit(lambda d: d["edges"][0].update(type="LIKES")), "LIKES"),
    "truncated-counts": (_edit(lambda d: d["edges"].pop()), "counts"),
    "nan": (_edit(lambda d: None).replace('"version": 1', '"version": 1, "x": NaN'), "NaN"),
    "repeated-field": ('{"format": "memnest-export", "format": "memnest-export", '
                       '"version": 1, "memories": []}', "twice"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_files_are_refused_and_write_nothing(call, workspace, name):
    body, expected = MALFORMED[name]
    path = workspace / "bad.json"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    with pytest.raises(ToolFailure) as failure:
        call("memory_import", path="bad.json")
    assert failure.value.code == "invalid_argument"
    assert expected in failure.value.message, failure.value.message
    assert "bad.json" in failure.value.message
    assert call("memory_list")["total"] == 0


def test_unreadable_inputs_give_clear_errors(call, workspace):
    with pytest.raises(ToolFailure) as missing:
        call("memory_import", path="nowhere.json")
    assert missing.value.code == "not_found"
    huge = workspace / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(65 * 1024 * 1024)  # sparse: costs no disk
    with pytest.raises(ToolFailure) as big:
        call("memory_import", path="huge.json")
    assert "over the limit" in big.value.message
    os.mkfifo(workspace / "pipe.json")
    with pytest.raises(ToolFailure) as fifo:  # refused at once, not read forever
        call("memory_import", path="pipe.json")
    assert "not a regular file" in fifo.value.message
    (workspace / "adir.json").mkdir()
    with pytest.raises(ToolFailure):
        call("memory_import", path="adir.json")
    assert call("memory_list")["total"] == 0


def test_links_in_a_file_are_bounded_and_written_without_quadratic_work(call, workspace):
    """40k edges once took 50 s under the write lock (a list searched for each one) while a
    search waited 49 s: links are counted in sets, written in chunks, and bounded."""
    from memnest_daemon.operations.transfer import MAX_IMPORT_LINKS
    folder = workspace / ".memnest"
    folder.mkdir(exist_ok=True)
    rows = [{"key": f"k{i}", "content": f"fact {i}: service s{i} reads queue q{i}"}
            for i in range(40)]
    many = [{"type": "RELATED_TO", "from": f"k{i % 40}", "to": f"k{(i * 7 + 1) % 40}"}
            for i in range(MAX_IMPORT_LINKS + 1)]
    (folder / "many.json").write_text(json.dumps(
        {"format": "memnest-export", "version": 1, "memories": rows, "edges": many}))
    with pytest.raises(ToolFailure) as refused:
        call("memory_import", path=".memnest/many.json")
    assert refused.value.code == "invalid_argument" and "edges" in refused.value.message
    assert call("memory_list")["total"] == 0  # nothing written from a refused file
    links = [{"type": "EXPLAINS", "from": f"k{i % 40}",
              "to": f"k{(i % 40 + 1 + (i // 40) % 39) % 40}"} for i in range(3000)]
    (folder / "links.json").write_text(json.dumps(
        {"format": "memnest-export", "version": 1, "memories": rows, "edges": links,
         "keep_separate": [[f"k{i}", f"k{i + 1}"] for i in range(39)] * 2}))
    out = call("memory_import", path=".memnest/links.json")
    distinct = {(e["from"], e["to"]) for e in links if e["from"] != e["to"]}
    assert out["edges"]["created"] == len(distinct)
    assert out["edges"]["exists"] + out["edges"]["skipped"] == 3000 - len(distinct)
    assert out["keep_separate"] == {"in_file": 78, "recorded": 39, "exists": 39, "skipped": 0}
    stored = call("memory_query", cypher_query="MATCH ()-[e:EXPLAINS]->() RETURN count(e) AS n",
                  read_only=True)["rows"][0]["n"]
    assert stored == len(distinct)
