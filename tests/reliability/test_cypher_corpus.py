"""The Cypher guard corpus (tests/cypher_corpus.py) through the daemon: a sample, then the
whole corpus in one run: every destructive or forbidden entry is refused, every write entry
is refused with read_only, unreadable text is invalid_argument, nothing is ever `internal`,
every memory survives the whole corpus, and no file the corpus names is written or changed
(the files it would write are absent after it; /etc and /etc/passwd as they were)."""
import os
import re

import pytest
from cypher_corpus import CORPUS, UNREADABLE, D, F, R, W
from memnest_shims.client import ToolFailure

NAMED = sorted({path for query, _, _ in CORPUS for path in re.findall(r"'(/[^']+)'", query)})


def _files_named() -> dict[str, tuple | None]:
    """Each absolute path the corpus names: its mode, owner, size and mtime, or None."""
    seen: dict[str, tuple | None] = {}
    for path in NAMED + ["/etc"]:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            seen[path] = None
            continue
        seen[path] = (info.st_mode, info.st_uid, info.st_size,
                      None if path == "/etc" else info.st_mtime_ns)
    return seen


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


def test_whole_guard_corpus_through_the_daemon(call):
    files = _files_named()
    assert "/etc/passwd" in files and files["/tmp/memnest-guard-out.csv"] is None
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
    assert _files_named() == files
