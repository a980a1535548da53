"""memory_dream rule by rule, on hand-built corpora with known answers, through a real daemon.

Ages and model signatures are set by editing the database while the daemon is stopped, as
time and an older model would have left them."""
import json
import subprocess
import sys
import textwrap
import time

import pytest
from support import db_edit

DAY = 86400

DUMP_QUERIES = [
    "MATCH (m:Memory) RETURN m.id, m.content, m.tags, m.importance, m.access_count, "
    "m.updated_at, m.accessed_at, m.embedding_model ORDER BY m.id",
    "MATCH (a:Memory)-[r]->(b) RETURN label(r), a.id, b.id ORDER BY a.id, b.id",
    "MATCH (t:Topic) RETURN t.name ORDER BY t.name",
    "MATCH (k:Meta) RETURN k.key, k.value ORDER BY k.key",
    "MATCH (v:SeparateVerdict) RETURN v.pair ORDER BY v.pair",
    "MATCH (g:GraphSignal) RETURN g.id, g.pagerank, g.community ORDER BY g.id",
]


def db_dump(workspace) -> str:
    """Every row that matters, as text, read with the daemon stopped."""
    script = textwrap.dedent(f"""
        import json, sys, ladybug as lb
        c = lb.Connection(lb.Database({str(workspace / '.memnest' / 'memory.lbug')!r},
                                      read_only=True))
        for query in json.loads(sys.stdin.read()):
            r = c.execute(query)
            while r.has_next():
                print(r.get_next())
    """)
    return subprocess.run([sys.executable, "-c", script], input=json.dumps(DUMP_QUERIES),
                          capture_output=True, text=True, check=True).stdout


class Session:
    """A private daemon for one dream test, restartable around database edits."""

    def __init__(self, daemon, workspace, **env):
        self.daemon, self.workspace = daemon, workspace
        daemon.env.update({"MEMORY_DEDUP_THRESHOLD": "1.01",  # keep twins apart on store
                           "MEMNEST_UPKEEP_IDLE_MINUTES": "0", **env})
        daemon.start()

    def call(self, tool, **args):
        client = self.daemon.client(autostart=False)
        try:
            return client.call_tool(tool, args, str(self.workspace))
        finally:
            client.close()

    def restart_after(self, statements):
        self.daemon.stop()
        db_edit(self.workspace, statements)
        self.daemon.start()

    def age(self, ids, days, accessed_days=None):
        stamp = f"timestamp('{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(time.time() - days * DAY))}')"
        sets = f"m.updated_at = {stamp}, m.created_at = {stamp}"
        if accessed_days is not None:
            when = time.strftime('%Y-%m-%d %H:%M:%S',
                                 time.gmtime(time.time() - accessed_days * DAY))
            sets += f", m.accessed_at = timestamp('{when}')"
        return (f"MATCH (m:Memory) WHERE m.id IN $ids SET {sets}", {"ids": ids})


@pytest.fixture
def session(fresh_daemon, workspace):
    return lambda **env: Session(fresh_daemon, workspace, **env)


def ids_of(result):
    return [r["id"] for r in result["results"]]


def test_prune_takes_only_old_unimportant_unlinked_unvisited(session):
    s = session()
    ids = ids_of(s.call("memory_store", items=[
        {"content": "Stale trivia about an old office plant", "importance": 1},
        {"content": "Stale but linked note about the build cache", "importance": 1},
        {"content": "Old but important rule: never force-push main", "importance": 4},
        {"content": "Fresh trivia about the coffee machine", "importance": 1},
        {"content": "Old trivia someone still reads: the wifi password hint", "importance": 2},
    ]))
    stale, linked, important, fresh, visited = ids
    s.call("memory_relate", from_id=linked, to_id=important)
    s.restart_after([s.age([stale, linked, important, visited], 90),
                     s.age([visited], 90, accessed_days=2)])
    report = s.call("memory_dream", force=True)
    assert report["status"] == "done"
    assert report["pruned"] == [stale]
    remaining = {m["id"] for m in s.call("memory_list", limit=50)["memories"]}
    assert remaining == {linked, important, fresh, visited}


def test_trivial_pairs_merge_keeping_every_edge_and_summed_access(session):
    s = session()
    a, b, x, y, z = ids_of(s.call("memory_store", items=[
        {"content": "The integration tests need Docker running locally", "tags": ["tests"]},
        {"content": "The integration tests need Docker running locally!", "tags": ["tests"]},
        {"content": "CI runs the integration tests nightly"},
        {"content": "Docker Desktop licensing changed in 2022"},
        {"content": "Use podman when Docker is unavailable"},
    ]))
    s.call("memory_relate", relations=[
        {"from_id": x, "to_id": a}, {"from_id": x, "to_id": b},  # parallel after the merge
        {"from_id": b, "to_id": y, "relationship": "EXPLAINS"},
        {"from_id": z, "to_id": b, "relationship": "SUPERSEDES"}])
    s.call("memory_keep_separate", pairs=[[b, y]])
    s.call("memory_get", id=a)
    s.call("memory_get", ids=[b])
    s.call("memory_get", ids=[b])
    report = s.call("memory_dream", force=True)
    assert len(report["merged"]) == 1
    merge = report["merged"][0]
    survivor, absorbed = merge["survivor"], merge["absorbed"]
    assert {survivor, absorbed} == {a, b} and merge["similarity"] >= 0.95
    got = s.call("memory_get", id=survivor)
    edges = {(e["type"], e["from_id"], e["to_id"]) for e in got["edges"]}
    assert edges == {("RELATED_TO", x, survivor), ("EXPLAINS", survivor, y),
                     ("SUPERSEDES", z, survivor)}
    assert got["kept_separate_from"] == [y]
    assert got["access_count"] == 3 + 1  # 1 + 2 from the two, + this get
    assert got["content"] == "The integration tests need Docker running locally!"
    assert s.call("memory_get", ids=[absorbed])["missing"] == [absorbed]


def test_review_clusters_keep_value_conflicts_and_drop_settled_pairs(session):
    s = session(MEMORY_DREAM_CLUSTER_LOW="0.75")
    p500, p900, cat1, cat2 = ids_of(s.call("memory_store", items=[
        {"content": "The checkout service p95 latency target is 500ms"},
        {"content": "The checkout service p95 latency target is 900ms"},
        {"content": "Our office cat is called Miso"},
        {"content": "Our office cat is called Miso and sleeps on the router"},
    ]))
    report = s.call("memory_dream", force=True, dry_run=True)
    gates = {tuple(sorted(p["ids"])): p["gate"] for c in report["clusters"]
             for p in c["pairs"]}
    assert gates[tuple(sorted([p500, p900]))] == "value_conflict"
    conflict = next(c for c in report["clusters"] if c["gate"] == "value_conflict")
    assert "SUPERSEDES" in conflict["resolution"] and "nothing is deleted" in conflict["resolution"]
    s.call("memory_keep_separate", pairs=[[p500, p900]])
    s.call("memory_relate", from_id=cat2, to_id=cat1, relationship="SUPERSEDES")
    report = s.call("memory_dream", force=True, dry_run=True)
    settled = {tuple(sorted(p["ids"])) for c in report["clusters"] for p in c["pairs"]}
    assert tuple(sorted([p500, p900])) not in settled
    assert tuple(sorted([cat1, cat2])) not in settled


def test_cycles_reported_even_on_dry_run_which_changes_nothing(session, workspace):
    s = session()
    a, b, c = ids_of(s.call("memory_store", items=[
        {"content": "Plan A: ship the beta in March", "importance": 1},
        {"content": "Plan B: ship the beta in April"},
        {"content": "Plan C: ship the beta in May"},
    ]))
    s.call("memory_relate", relations=[
        {"from_id": a, "to_id": b, "relationship": "SUPERSEDES"},
        {"from_id": b, "to_id": c, "relationship": "SUPERSEDES"},
        {"from_id": c, "to_id": a, "relationship": "SUPERSEDES"}])
    s.restart_after([s.age([a], 90)])
    s.daemon.stop()
    before = db_dump(workspace)
    s.daemon.start()
    report = s.call("memory_dream", dry_run=True, force=True)
    assert report["status"] == "planned"
    assert report["supersession_cycles"] == [sorted([a, b, c])]
    s.daemon.stop()
    assert db_dump(workspace) == before
    s.daemon.start()


def test_rotating_window_covers_three_windows_in_three_runs(session):
    s = session(MEMORY_CONSOLIDATE_SCAN="10")
    s.call("memory_store", items=[{"content": f"Window note {n}: port {8000 + n} is reserved"}
                                  for n in range(30)])
    seen, starts = set(), []
    for _ in range(3):
        coverage = s.call("memory_dream", force=True)["scan_coverage"]
        starts.append(coverage["window_start"])
        seen.update(coverage["window_ids"])
        assert coverage["examined"] == 10 and coverage["runs_for_full_coverage"] == 3
    assert starts == [0, 10, 20] and len(seen) == 30
    assert s.call("memory_dream", force=True)["scan_coverage"]["window_start"] == 0  # wraps


def test_stale_signatures_are_reembedded(session):
    s = session()
    ids = ids_of(s.call("memory_store", items=[{"content": "Re-embed me please"},
                                               {"content": "I am current"}]))
    s.restart_after([("MATCH (m:Memory) WHERE m.id = $id SET m.embedding_model = 'old/model', "
                      "m.embedding = NULL", {"id": ids[0]})])
    health = s.call("memory_stats")["index_health"]
    assert health["stale_embedding_signature"] == 1 and not health["healthy"]
    assert s.call("memory_dream", force=True)["reembedded"] == 1
    health = s.call("memory_stats")["index_health"]
    assert health["healthy"] and health["vector_indexed"] == 2


def test_gates_and_persistent_state(session):
    s = session(MEMORY_DREAM_MIN_MEMORIES="3", MEMORY_DREAM_MIN_OPS="2",
                MEMORY_DREAM_MIN_HOURS="1")
    s.call("memory_store", content="Only one memory so far")
    skipped = s.call("memory_dream")
    assert skipped["status"] == "skipped"
    assert any("MEMORY_DREAM_MIN_MEMORIES" in r for r in skipped["gates"]["reasons"])
    s.call("memory_store", items=[{"content": "Second memory"}, {"content": "Third memory"}])
    assert s.call("memory_dream")["status"] == "done"
    s.daemon.stop()  # the state is in the database: a restart does not reopen the gate
    s.daemon.start()
    again = s.call("memory_dream")
    assert again["status"] == "skipped"
    assert any("MEMORY_DREAM_MIN_HOURS" in r for r in again["gates"]["reasons"])


def test_graph_signal_is_a_search_channel(session):
    s = session()
    hub, a, b, other = ids_of(s.call("memory_store", items=[
        {"content": "The payments service owns refunds"},
        {"content": "Refund requests go through the payments queue"},
        {"content": "Refunds above 500 EUR need approval"},
        {"content": "Refunds are listed on the finance dashboard"},
    ]))
    s.call("memory_relate", relations=[{"from_id": a, "to_id": hub},
                                       {"from_id": b, "to_id": hub}])
    report = s.call("memory_dream", force=True)
    assert report["graph"]["nodes"] == 3
    results = s.call("memory_search", query="refunds", explain=True)["results"]
    parts = {r["id"]: r["explain"] for r in results}
    assert parts[hub]["graph"] > 0 and "graph" not in parts[other]
    assert parts[hub]["graph"] <= 0.15 + 1e-9


def test_reindex_reports_counts(session):
    s = session()
    s.call("memory_store", items=[{"content": "one"}, {"content": "two"}])
    assert {k: v for k, v in s.call("memory_reindex").items() if k != "duration_ms"} == {
        "memories": 2, "vector_indexed": 2, "keyword_indexed": 2}


def test_scheduled_upkeep_dreams_alone_without_delaying_search(fresh_daemon, workspace):
    fresh_daemon.env.update({"MEMNEST_UPKEEP_IDLE_MINUTES": "0.03",  # ~2 s
                             "MEMORY_DREAM_MIN_MEMORIES": "1", "MEMORY_DREAM_MIN_OPS": "1",
                             "MEMORY_DREAM_MIN_HOURS": "0", "MEMORY_DEDUP_THRESHOLD": "1.01"})
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    twins = [{"content": f"Twin note {n} says service {n} restarts nightly" + end}
             for n in range(60) for end in ("", "!")]
    client.call_tool("memory_store", {"items": twins}, str(workspace))
    baseline = []
    for _ in range(5):
        began = time.monotonic()
        client.call_tool("memory_search", {"query": "which service restarts"}, str(workspace))
        baseline.append(time.monotonic() - began)

    # Wait, without touching the workspace, until the daemon starts dreaming on its own...
    deadline = time.monotonic() + 60
    while "dreaming if its gates allow" not in fresh_daemon.log.read_text():
        assert time.monotonic() < deadline, "the daemon never started an upkeep dream"
        time.sleep(0.02)
    # ...then search as fast as possible until the dream is done.
    during = []
    while "upkeep dream for" not in fresh_daemon.log.read_text():
        assert time.monotonic() < deadline, "the upkeep dream never finished"
        began = time.monotonic()
        client.call_tool("memory_search", {"query": "which service restarts"}, str(workspace))
        during.append(time.monotonic() - began)
    assert client.call_tool("memory_list", {"limit": 500}, str(workspace))["total"] == 60
    baseline.sort()
    during.sort()
    print(f"\nsearch before upkeep: p50 {baseline[2] * 1000:.1f} ms; during the upkeep dream "
          f"(60 merges): n={len(during)}, p50 {during[len(during) // 2] * 1000:.1f} ms, "
          f"max {during[-1] * 1000:.1f} ms" if during else "\n(no search overlapped)")
    # Each search but the last was answered before the dream's end was logged: searches
    # went on during it, not held until it finished (then only one would have run here).
    # The latencies above are figures, not bounds.
    assert len(during) >= 3, "no search overlapped the dream"


def test_stats_census_counts_against_the_database(session):
    s = session()
    s.call("memory_store", items=[{"content": "counted one"}, {"content": "counted two"}])
    s.restart_after([("CREATE (:Memory {id: 99, content: 'made by hand', workspace: $ws, "
                      "tags: [], importance: 3, access_count: 0})", {"ws": str(s.workspace)})])
    stats = s.call("memory_stats")
    health = stats["index_health"]
    assert health["rows_in_database"] == 3 and health["rows_with_embedding"] == 2
    assert health["rows_without_embedding"] == 1 and health["stale_embedding_signature"] == 1
    assert not health["healthy"]
    runtime = stats["runtime"]
    assert runtime["open_workspaces"] == [str(s.workspace)]
    assert {"version", "uptime_seconds", "rss_bytes", "model_load_seconds"} <= set(runtime)
    s.call("memory_dream", force=True)  # re-embeds the hand-made row
    assert s.call("memory_stats")["index_health"]["healthy"]
