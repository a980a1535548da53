"""The Cypher guard corpus (tests/test_cypher_guard.py, imported, not copied) runs here in
full through the daemon: every destructive or forbidden entry is refused, every write entry is
refused with read_only, unreadable text is invalid_argument, nothing is ever `internal`, and
every memory survives the whole corpus."""
import pytest

from memnest_shims.client import ToolFailure
from tests.test_cypher_guard import CORPUS, UNREADABLE, D, F, R, W


def test_whole_guard_corpus_through_the_daemon(call):
    stored = call("memory_store", items=[{"content": "The deploy script lives in ops/"},
                                         {"content": "Releases are cut on Tuesdays"}])
    ids = sorted(r["id"] for r in stored["results"])
    refused = 0
    for query, kind, _ in CORPUS:
        if kind == R:
            assert call("memory_query", cypher_query=query, read_only=True)["kind"] == "read"
            continue
        attempts = [{"read_only": True}] + ([{}] if kind in (D, F) else [])
        for extra in attempts:
            with pytest.raises(ToolFailure) as failure:
                call("memory_query", cypher_query=query, **extra)
            assert failure.value.code == "permission_denied", (query, failure.value)
            refused += 1
    for query in UNREADABLE:
        with pytest.raises(ToolFailure) as failure:
            call("memory_query", cypher_query=query)
        assert failure.value.code == "invalid_argument", (query, failure.value)
    assert sorted(m["id"] for m in call("memory_list")["memories"]) == ids
    assert call("memory_stats")["index_health"]["healthy"]
    assert refused >= len([k for _, k, _ in CORPUS if k in (D, F, W)])
