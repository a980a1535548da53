"""A memory's code context is parsed once where a row becomes a Memory and written back as
the same JSON text: read back from the database file after a reopen, and from the journal of
deferred rows, it equals what was written; a row a raw write left with malformed code reads
as citing no code."""
import json

import numpy as np
from memnest_daemon.core.anchors import NO_CODE, Anchor, CodeContext
from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.storage.row_journal import _line, _memories
from memnest_daemon.store.store import MemoryStore
from support import put_memories

DIM = 8
CONTEXT = CodeContext((Anchor(path="src/app.py", start=3, end=9, symbol="serve"),
                       Anchor(path="docs/ü.md")), branch="feature/x", commit="abc123")


def _open(tmp_path) -> MemoryStore:
    return MemoryStore(str(tmp_path / "memory.lbug"), "model", DIM, 64, 1)


def _memory(n: int, code: CodeContext) -> Memory:
    now, text = utcnow(), f"fact number {n} about the service"
    return Memory(id=n, content=text, content_hash=content_hash(text), category="general",
                  tags=[], importance=3, access_count=0, workspace="/w", created_at=now,
                  updated_at=now, embedding_model="model", code=code)


def _vectors(n: int) -> list[np.ndarray]:
    rows = np.random.default_rng(n).normal(size=(n, DIM)).astype(np.float32)
    return list(rows / np.linalg.norm(rows, axis=1)[:, None])


def test_the_context_comes_back_parsed_after_a_reopen(tmp_path):
    store = _open(tmp_path)
    put_memories(store, [_memory(1, CONTEXT), _memory(2, NO_CODE)], _vectors(2))
    store.close()
    store = _open(tmp_path)
    try:
        assert store.catalog[1].code == CONTEXT and store.catalog[2].code is NO_CODE
        stored = dict(store.db.rows("MATCH (m:Memory) RETURN m.id, m.code"))
        assert stored == {1: CONTEXT.to_json(), 2: ""}  # the column holds JSON text, as ever
    finally:
        store.close()


def test_malformed_code_in_the_database_reads_as_none(tmp_path):
    store = _open(tmp_path)
    put_memories(store, [_memory(1, CONTEXT), _memory(2, CONTEXT)], _vectors(2))
    with store.db.transaction():
        store.db.rows("MATCH (m:Memory) WHERE m.id = 1 SET m.code = '{not json'")
        store.db.rows("MATCH (m:Memory) WHERE m.id = 2 SET m.code = $code",
                      {"code": json.dumps({"anchors": [{"path": 7}], "branch": ["x"]})})
    store.close()
    store = _open(tmp_path)
    try:
        assert not store.catalog[1].code and store.catalog[1].code == CodeContext.parse("{")
        assert store.catalog[2].code.anchors == ()  # an anchor without a string path is dropped
    finally:
        store.close()


def test_the_journal_keeps_the_context_as_text():
    line = _line([_memory(1, CONTEXT), _memory(2, NO_CODE)])
    rows = json.loads(line)
    assert [r["code"] for r in rows] == [CONTEXT.to_json(), ""]
    assert [m.code for m in _memories(line)] == [CONTEXT, NO_CODE]
