"""Relations, keep-separate verdicts and topics, through the real daemon."""
import pytest

from memnest_shims.client import ToolFailure


@pytest.fixture
def three(call):
    stored = call("memory_store", items=[
        {"content": "The API gateway times out after 30 seconds", "tags": ["api", "timeouts"]},
        {"content": "The API gateway now times out after 60 seconds", "tags": ["api"]},
        {"content": "Long report queries need more than 30 seconds", "tags": ["reports"]},
    ])
    return [r["id"] for r in stored["results"]]


def test_relate_is_idempotent_and_validates_endpoints(call, three):
    old, new, why = three
    assert call("memory_relate", from_id=new, to_id=old, relationship="SUPERSEDES")["status"] \
        == "created"
    assert call("memory_relate", from_id=new, to_id=old, relationship="SUPERSEDES")["status"] \
        == "exists"
    assert call("memory_relate", from_id=why, to_id=new, relationship="EXPLAINS")["status"] \
        == "created"
    assert call("memory_relate", from_id=why, to_id=old)["relationship"] == "RELATED_TO"
    with pytest.raises(ToolFailure) as missing:
        call("memory_relate", from_id=old, to_id=987654)
    assert missing.value.code == "not_found" and "987654" in missing.value.message
    with pytest.raises(ToolFailure) as self_link:
        call("memory_relate", from_id=old, to_id=old)
    assert self_link.value.code == "invalid_argument"

    batch = call("memory_relate", relations=[
        {"from_id": old, "to_id": why, "relationship": "RELATED_TO"},
        {"from_id": why, "to_id": old},  # made above: exists
        {"from_id": old, "to_id": new},
        {"from_id": new, "to_id": 555555},
    ])
    assert [r["status"] for r in batch["results"]] == ["created", "exists", "created",
                                                      "not_found"]

    got = call("memory_get", id=old)
    assert got["superseded"] is True and got["superseded_by"] == [new]
    assert {"type": "SUPERSEDES", "from_id": new, "to_id": old} in got["edges"]
    assert call("memory_get", id=new)["supersedes"] == [old]


def test_unrelate_one_type_or_all(call, three):
    a, b, _ = three
    call("memory_relate", relations=[
        {"from_id": a, "to_id": b, "relationship": "RELATED_TO"},
        {"from_id": b, "to_id": a, "relationship": "EXPLAINS"},
        {"from_id": a, "to_id": b, "relationship": "SUPERSEDES"}])
    one = call("memory_unrelate", from_id=a, to_id=b, relationship="SUPERSEDES")
    assert one == {"status": "removed",
                   "removed": [{"type": "SUPERSEDES", "from_id": a, "to_id": b}]}
    everything = call("memory_unrelate", from_id=b, to_id=a, both_directions=True)
    assert {e["type"] for e in everything["removed"]} == {"RELATED_TO", "EXPLAINS"}
    assert call("memory_get", id=a)["edges"] == []
    assert call("memory_unrelate", from_id=a, to_id=b)["status"] == "not_found"


def test_unrelate_removes_only_the_named_direction(call, three):
    """A SUPERSEDES cycle of two is broken by removing the wrong link and keeping the true
    one: 5 -> 21 goes, 21 -> 5 stays."""
    a, b, _ = three
    call("memory_relate", from_id=a, to_id=b, relationship="SUPERSEDES")
    closing = call("memory_relate", from_id=b, to_id=a, relationship="SUPERSEDES")
    assert closing["supersession_cycle"] == sorted([a, b])
    out = call("memory_unrelate", from_id=a, to_id=b, relationship="SUPERSEDES")
    assert out["removed"] == [{"type": "SUPERSEDES", "from_id": a, "to_id": b}]
    assert out["kept_other_direction"] == [{"type": "SUPERSEDES", "from_id": b, "to_id": a}]
    got = call("memory_get", id=a)
    assert got["edges"] == [{"type": "SUPERSEDES", "from_id": b, "to_id": a}]
    assert got["superseded_by"] == [b] and "supersession_cycle" not in got
    everything = call("memory_unrelate", from_id=a, to_id=b)  # every type, a -> b only
    assert everything["status"] == "not_found"
    assert call("memory_get", id=b)["supersedes"] == [a]


def test_supersedes_cycle_is_reported(call, three):
    a, b, c = three
    call("memory_relate", from_id=a, to_id=b, relationship="SUPERSEDES")
    call("memory_relate", from_id=b, to_id=c, relationship="SUPERSEDES")
    closing = call("memory_relate", from_id=c, to_id=a, relationship="SUPERSEDES")
    assert closing["supersession_cycle"] == sorted([a, b, c])
    assert call("memory_get", id=b)["supersession_cycle"] == sorted([a, b, c])


def test_keep_separate_pairs_and_order(call, three):
    a, b, c = three
    every = call("memory_keep_separate", memory_ids=[a, b, c])
    assert every["recorded"] == 3
    again = call("memory_keep_separate", pairs=[[b, a]])
    assert again["results"] == [{"pair": sorted([a, b]), "status": "exists"}]
    assert call("memory_get", id=a)["kept_separate_from"] == sorted([b, c])
    assert call("memory_get", id=a)["edges"] == []  # a verdict is not an edge

    call("memory_delete", id=c)
    assert call("memory_get", id=a)["kept_separate_from"] == [b]
    fresh = call("memory_store", content="Something entirely unrelated about lunch")
    assert call("memory_keep_separate", pairs=[[fresh["id"], a]])["recorded"] == 1
    with pytest.raises(ToolFailure):
        call("memory_keep_separate", memory_ids=[a, 424242])


def test_deleting_a_memory_removes_its_edges(call, three):
    a, b, c = three
    call("memory_relate", from_id=a, to_id=b)
    call("memory_relate", from_id=c, to_id=b, relationship="EXPLAINS")
    call("memory_delete", id=b)
    assert call("memory_get", id=a)["edges"] == []
    assert call("memory_get", id=c)["edges"] == []


def test_topics_count_and_orphans_are_reaped(call, three):
    a, b, c = three
    topics = call("memory_topics")["topics"]
    assert topics[0] == {"name": "api", "count": 2}
    assert {"name": "reports", "count": 1} in topics
    call("memory_delete", id=c)
    call("memory_update", id=a, tags=["api"])
    names = {t["name"] for t in call("memory_topics")["topics"]}
    assert names == {"api"}
    schema_topics = call("memory_stats")["top_topics"]
    assert schema_topics == {"api": 2}


def test_search_demotes_superseded_unless_in_a_cycle(call):
    old = call("memory_store", content="Releases are cut from the develop branch")["id"]
    new = call("memory_store", content="Releases are cut from the main branch now")["id"]
    before = {r["id"]: r["score"] for r in
              call("memory_search", query="which branch are releases cut from")["results"]}
    call("memory_relate", from_id=new, to_id=old, relationship="SUPERSEDES")
    results = call("memory_search", query="which branch are releases cut from",
                   explain=True)["results"]
    after = {r["id"]: r for r in results}
    assert after[old]["superseded"] is True and after[old]["superseded_by"] == [new]
    assert after[old]["score"] == pytest.approx(before[old] * 0.5, abs=2e-3)
    assert after[old]["explain"]["superseded"] < 0
    assert results[0]["id"] == new

    call("memory_relate", from_id=old, to_id=new, relationship="SUPERSEDES")  # a cycle
    cyc = {r["id"]: r for r in
           call("memory_search", query="which branch are releases cut from")["results"]}
    assert cyc[old]["supersession_cycle"] == sorted([old, new])
    assert "superseded" not in cyc[old]
    assert cyc[old]["score"] == pytest.approx(before[old], abs=2e-3)


def test_access_is_counted_and_survives_a_restart(fresh_daemon, workspace):
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    stored = client.call_tool("memory_store", {"content": "Counted when read"}, str(workspace))
    client.call_tool("memory_get", {"id": stored["id"]}, str(workspace))
    client.call_tool("memory_search", {"query": "counted when read"}, str(workspace))
    got = client.call_tool("memory_get", {"id": stored["id"]}, str(workspace))
    assert got["access_count"] == 3 and got["accessed_at"]
    client.shutdown("test")  # a clean stop saves the counts
    fresh_daemon.proc.wait(timeout=60)
    fresh_daemon.start()
    listed = fresh_daemon.client(autostart=False).call_tool(
        "memory_list", {"order_by": "accessed"}, str(workspace))
    assert listed["memories"][0]["access_count"] == 3
