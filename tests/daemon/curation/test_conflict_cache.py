"""Conflict flags come from each memory's nearest memories, which are kept across writes: a
write forgets only the entries it can change. Whatever the writes, the flags must equal
those found afresh, with no cache at all."""
from types import SimpleNamespace

import numpy as np
import pytest

from memnest_daemon.curation.conflicts import conflicts, fill_rows, settle_all
from memnest_daemon.store.neighbours import NeighbourCache
from memnest_daemon.core.records import Memory, content_hash, utcnow
from memnest_daemon.curation.values import value_disagreement
from memnest_daemon.search.neighbour_table import KEPT
from memnest_daemon.store.changes import Changes
from memnest_daemon.store.store import MemoryStore

from support import put_memories

DIM = 8
SETTINGS = SimpleNamespace(conflict_threshold=0.9, conflict_value_floor=0.6)
RNG = np.random.default_rng(11)
SUBJECTS = ("deploy timeout", "cache size", "queue depth", "retry limit")


def _text(n: int) -> str:
    return f"the {SUBJECTS[n % len(SUBJECTS)]} is {RNG.integers(1, 4) * 10} seconds"


def _vector(n: int) -> np.ndarray:
    """Memories on one subject point roughly the same way, so they are neighbours."""
    v = np.zeros(DIM, dtype=np.float32)
    v[n % len(SUBJECTS)] = 1.0
    v += RNG.normal(scale=0.35, size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def _write(store: MemoryStore, ids: list[int], workspace: str) -> None:
    now = utcnow()
    texts = [_text(n) for n in ids]  # random: drawn once per memory
    memories = [Memory(id=n, content=text, content_hash=content_hash(text),
                       category="general", tags=[], importance=3, access_count=0,
                       workspace=workspace, created_at=now, updated_at=now,
                       embedding_model=store.model) for n, text in zip(ids, texts)]
    put_memories(store, memories, [_vector(n) for n in ids])


def _delete(store: MemoryStore, ids: list[int]) -> None:
    with store.writing():
        store.commit(Changes(deleted=ids))


def _fresh(store: MemoryStore, memories: list[Memory], workspace: str) -> dict:
    kept, store.neighbours = store.neighbours, NeighbourCache()
    try:
        return conflicts(store, memories, SETTINGS, workspace)
    finally:
        store.neighbours = kept


@pytest.mark.parametrize("workspaces", [("/a", "/b"), ("/a",)])
def test_flags_after_any_writes_equal_flags_found_afresh(tmp_path, monkeypatch, workspaces):
    """Two workspaces in one database: entries by memory and workspace. One workspace: the
    whole database's rows (neighbour_table.py), compared a few vectors at a time."""
    monkeypatch.setattr("memnest_daemon.search.neighbour_table.CHUNK", 3)
    store = MemoryStore(str(tmp_path / "memory.lbug"), "model", DIM, 64, 1)
    try:
        next_id, settled, flags_seen = 1, 0, 0
        for round_ in range(40):
            workspace = workspaces[round_ % 3 == 0 and len(workspaces) > 1]
            action = RNG.integers(0, 5)
            if action == 0 or len(store.catalog) < 8:  # new memories
                count = int(RNG.integers(1, 4))
                _write(store, list(range(next_id, next_id + count)), workspace)
                next_id += count
            elif action == 4:  # a batch: more than FORGET_ALL_FROM at once
                _write(store, list(range(next_id, next_id + 40)), workspace)
                next_id += 40
            elif action == 1:  # rewrite some: new text, new vector, maybe another workspace
                _write(store, RNG.choice(sorted(store.catalog), 2, replace=False).tolist(),
                       workspace)
            elif action == 2:
                _delete(store, [int(RNG.choice(sorted(store.catalog)))])
            else:  # an agent settles a flagged pair: the flags change, the neighbours not
                flagged = conflicts(store, list(store.catalog.values()), SETTINGS, workspace)
                if flagged:
                    a = min(flagged)
                    b = flagged[a][0]["memory_id"]
                else:
                    a, b = RNG.choice(sorted(store.catalog), 2, replace=False).tolist()
                settled += bool(flagged)
                with store.writing():
                    if round_ % 2:
                        store.commit(Changes(kept_separate=[(a, b)]))
                    else:
                        store.commit(Changes(edges_added=[("SUPERSEDES", a, b)]))
            for ws in workspaces:
                shown = [m for m in store.catalog.values() if m.workspace == ws][:12]
                found = conflicts(store, shown, SETTINGS, ws)
                assert found == _fresh(store, shown, ws), (round_, ws)
                flags_seen += sum(map(len, found.values()))
        assert store.neighbours.size() > 0  # entries did survive writes
        assert settled >= 3 and flags_seen >= 40, (settled, flags_seen)  # it tested something
    finally:
        store.close()


def test_a_write_keeps_the_entries_it_cannot_change(tmp_path):
    store = MemoryStore(str(tmp_path / "memory.lbug"), "model", DIM, 64, 1)
    try:
        _write(store, list(range(1, 41)), "/a")
        conflicts(store, list(store.catalog.values()), SETTINGS, "/a")
        before = store.neighbours.size()
        _write(store, [41], "/a")
        after = store.neighbours.size()
        assert before // 2 < after <= before + 1, (before, after)  # + the new one's own row
    finally:
        store.close()


def test_a_write_into_a_one_workspace_database_keeps_every_row(tmp_path, monkeypatch):
    """Rows of the whole database are kept through writes, the new memories' own rows found
    by the write itself: after new memories are stored, flags for every memory need no
    further pass over the matrix."""
    store = MemoryStore(str(tmp_path / "memory.lbug"), "model", DIM, 64, 1)
    try:
        _write(store, list(range(1, 61)), "/a")
        conflicts(store, list(store.catalog.values()), SETTINGS, "/a")
        asked = []
        search_many = store.vectors.search_many
        monkeypatch.setattr(store.vectors, "search_many",
                            lambda queries, *a, **k: asked.append(len(queries)) or
                            search_many(queries, *a, **k))
        _write(store, [61, 62, 63], "/a")  # near many: they enter rows, full or not
        _write(store, [64 + n for n in range(40)], "/a")  # a batch
        everything = list(store.catalog.values())
        found = conflicts(store, everything, SETTINGS, "/a")
        assert asked == [], asked
        assert found == _fresh(store, everything, "/a")
    finally:
        store.close()


def test_the_cache_keeps_at_most_its_limit(tmp_path, monkeypatch):
    """Entries by memory and workspace (a database shared by workspaces) are bounded."""
    monkeypatch.setattr("memnest_daemon.store.neighbours.MAX_ENTRIES", 10)
    store = MemoryStore(str(tmp_path / "memory.lbug"), "model", DIM, 64, 1)
    try:
        _write(store, list(range(1, 31)), "/a")
        _write(store, [31], "/b")
        shown = list(store.catalog.values())
        for first in range(0, 30, 5):
            page = shown[first:first + 5]
            assert conflicts(store, page, SETTINGS, "/a") == _fresh(store, page, "/a")
        assert store.neighbours.size() <= 10
    finally:
        store.close()


def test_rows_are_saved_with_the_vector_snapshot_and_trusted_only_as_far_as_it(tmp_path,
                                                                              monkeypatch):
    """A clean close saves the rows beside the vectors; the next open finds every memory's
    flags without a pass over the matrix. After a write the snapshot missed (a crash), the
    rows are found again."""
    path = str(tmp_path / "memory.lbug")
    store = MemoryStore(path, "model", DIM, 64, 1)
    _write(store, list(range(1, 41)), "/a")
    conflicts(store, list(store.catalog.values()), SETTINGS, "/a")
    store.close()

    store = MemoryStore(path, "model", DIM, 64, 1)
    try:
        assert store.neighbours.table.size() == 40
        asked = []
        search_many = store.vectors.search_many
        monkeypatch.setattr(store.vectors, "search_many",
                            lambda queries, *a, **k: asked.append(len(queries)) or
                            search_many(queries, *a, **k))
        checked = []
        monkeypatch.setattr("memnest_daemon.curation.conflicts.value_disagreement",
                            lambda a, b: checked.append(1) or value_disagreement(a, b))
        everything = list(store.catalog.values())
        found = conflicts(store, everything, SETTINGS, "/a")
        assert asked == [] and checked == []  # rows and the texts' verdicts were kept
        assert found == _fresh(store, everything, "/a") and found
        _write(store, [7], "/a")  # new text and vector, then no clean close
    finally:
        store.db.close()

    store = MemoryStore(path, "model", DIM, 64, 1)
    try:
        assert store.neighbours.table is None  # memory 7 changed since the rows were saved
        everything = list(store.catalog.values())
        assert conflicts(store, everything, SETTINGS, "/a") == _fresh(store, everything, "/a")
    finally:
        store.close()


def test_idle_databases_get_their_rows_in_the_background(tmp_path, monkeypatch):
    """The housekeeping thread finds rows (and value verdicts) for memories that have none,
    a few at a time, only in databases no call is using; searches then find them known."""
    from memnest_daemon.store import registry as registry_module
    from memnest_daemon.store.registry import StoreRegistry

    monkeypatch.setattr(registry_module, "FILL_ROWS", 7)
    registry = StoreRegistry("model", DIM, 64, 1, 1)
    try:
        store = registry.acquire(str(tmp_path), "")
        _write(store, list(range(1, 51)), str(tmp_path))
        registry.release(store)
        floor = min(SETTINGS.conflict_threshold, SETTINGS.conflict_value_floor)
        assert registry.fill_neighbours(fill_rows, floor) == 0  # just used: left alone
        store.last_used -= 60
        held = registry.acquire(str(tmp_path), "")  # a call is using it
        assert registry.fill_neighbours(fill_rows, floor) == 0
        registry.release(held, used=False)
        assert registry.fill_neighbours(fill_rows, floor, budget_s=60) == 50
        assert store.neighbours.table.size() == 50
        checked = []
        monkeypatch.setattr("memnest_daemon.curation.conflicts.value_disagreement",
                            lambda a, b: checked.append(1) or value_disagreement(a, b))
        monkeypatch.setattr(store.vectors, "search_many", None)  # must not be needed
        everything = list(store.catalog.values())
        found = conflicts(store, everything, SETTINGS, str(tmp_path))
        assert checked == [] and found
        monkeypatch.undo()
        assert found == _fresh(store, everything, str(tmp_path))
    finally:
        registry.close_all()


def test_saved_verdicts_of_another_value_rule_are_found_again():
    """A snapshot keeps each neighbour entry's verdict (do the two disagree on a value?);
    when the rule changes, the rows stay but the verdicts are checked again."""
    from memnest_daemon.curation import values
    from memnest_daemon.search.neighbour_table import DISAGREE, UNKNOWN, NeighbourTable
    table = NeighbourTable(0.5, values.RULE)
    table.put(3, [(3, 1.0), (4, 0.9)])
    table.verdicts_of(3)[1] = DISAGREE
    state = table.state()
    cache = NeighbourCache(NeighbourTable.from_state(state))
    cache.use_floor(0.5, values.RULE)
    assert cache.table.verdicts_of(3)[1] == DISAGREE
    state["neighbour_rule"] = np.array(values.RULE - 1)
    cache = NeighbourCache(NeighbourTable.from_state(state))
    cache.use_floor(0.5, values.RULE)
    assert cache.table.get(3) == table.get(3) and cache.table.verdicts_of(3)[1] == UNKNOWN


def test_a_store_leaves_the_verdicts_of_every_row_it_entered_known(tmp_path, monkeypatch):
    """Storing memories puts them into other memories' rows; their value verdicts are
    recorded then (once per pair, in both rows that list it), as are those of rows an
    earlier write of another kind entered or forgot (forgotten rows are found again), so a
    search showing any of those memories compares no texts. Each verdict is the one found
    afresh."""
    from memnest_daemon.curation.ingest import Item, ingest
    from memnest_daemon.search.neighbour_table import DISAGREE, UNKNOWN

    settings = SimpleNamespace(**vars(SETTINGS), dedup_threshold=0.999,
                               merge_tag_overlap=1.0, merge_value_gate=True)
    store = MemoryStore(str(tmp_path / "db"), "model", DIM, 64, 1)
    try:
        for batch in (range(1, 41), range(41, 81), range(81, 121), None, range(121, 125)):
            if batch is None:  # rewritten: the full rows that list them are forgotten
                _write(store, [3, 50, 90], str(tmp_path))
                assert sum(table.get(i) is None for i in store.catalog) > 3
                continue
            items = [Item(content=f"{_text(n)}, said note {n}") for n in batch]
            with store.writing():
                ingest(store, str(tmp_path), items, [_vector(n) for n in batch], settings)
            table = store.neighbours.table
        table = store.neighbours.table
        by_id = store.catalog
        assert all(table.get(i) is not None for i in by_id)  # rows a write forgot: found again
        for row in np.flatnonzero(table.known).tolist():
            for j, (other, _) in enumerate(table.get(row)):
                if other == row:
                    continue
                verdict = table.verdicts_of(row)[j]
                assert verdict != UNKNOWN, (row, other)
                low, high = sorted((row, other))
                assert (verdict == DISAGREE) == value_disagreement(by_id[low].content,
                                                                   by_id[high].content)
        checked = []
        monkeypatch.setattr("memnest_daemon.curation.conflicts.value_disagreement",
                            lambda a, b: checked.append(1) or value_disagreement(a, b))
        shown = list(store.catalog.values())
        found = conflicts(store, shown, SETTINGS, str(tmp_path))
        assert checked == [] and found
    finally:
        store.close()


def test_the_graph_answers_pair_and_supersession_questions_as_its_edges_say():
    """Flags ask which edges join each pair they show, and ranking which candidates are
    superseded: both are answered from indexes the graph keeps, equal to a scan of the
    edges through additions, removals and forgotten memories."""
    import random

    from memnest_daemon.store.graph import Graph

    rng = random.Random(3)
    graph = Graph([], [])
    for _ in range(300):
        a, b = rng.randint(1, 25), rng.randint(1, 25)
        rel = rng.choice(["SUPERSEDES", "RELATED_TO", "CAUSED_BY"])
        step = rng.random()
        if step < 0.6:
            graph.add(rel, a, b)
        elif step < 0.9:
            graph.remove(rel, a, b)
        else:
            graph.forget([a])
        for x in range(1, 26):
            y = rng.randint(1, 25)
            assert graph.between(x, y) == \
                sorted(e for e in graph.edges if {e[1], e[2]} == {x, y})
            assert graph.superseded_by(x) == \
                sorted(f for r, f, t in graph.edges if r == "SUPERSEDES" and t == x)
        ids = rng.sample(range(1, 26), 5)
        assert graph.any_superseded(ids) == any(graph.superseded_by(i) for i in ids)


@pytest.mark.parametrize("other_workspace", [False, True])
def test_an_import_leaves_every_row_and_verdict_known(tmp_path, monkeypatch, other_workspace):
    """memory_import's chunks are writes far past MAINTAIN_UP_TO: they keep every row anyway
    (each chunk's own rows from the product that enters them into the others) and settle
    the verdicts, so a search right after the import compares no texts and makes no pass
    over the matrix. A database shared with another workspace keeps no rows (they would be
    the whole database's, not the workspace's): its flags are still those found afresh."""
    from memnest_daemon.curation.ingest import Item, ingest
    from memnest_daemon.search.neighbour_table import UNKNOWN

    monkeypatch.setattr("memnest_daemon.search.neighbour_table.MAINTAIN_UP_TO", 10)
    monkeypatch.setattr("memnest_daemon.search.neighbour_table.CHUNK", 7)
    monkeypatch.setattr("memnest_daemon.search.neighbour_table.MANY_VECTORS", 5)  # both orders
    settings = SimpleNamespace(**vars(SETTINGS), dedup_threshold=0.999,
                               merge_tag_overlap=1.0, merge_value_gate=True)
    store = MemoryStore(str(tmp_path / "db"), "model", DIM, 64, 1)
    workspace = str(tmp_path)
    try:
        if other_workspace:
            _write(store, [1, 2, 3], "/elsewhere")
        before = set(store.catalog)
        for batch in (range(10, 40), range(40, 75), range(75, 120)):  # three chunks
            items = [Item(content=f"{_text(n)}, said note {n}") for n in batch]
            with store.writing():
                ingest(store, workspace, items, [_vector(n) for n in batch], settings,
                       merge_into=before, flag_conflicts=False)
        settle_all(store)  # as memory_import does once every chunk is in
        table = store.neighbours.table
        shown = [m for m in store.catalog.values() if m.workspace == workspace]
        if other_workspace:
            assert table is None or table.size() == 0
            assert conflicts(store, shown, SETTINGS, workspace) == \
                _fresh(store, shown, workspace)
            return
        ids = sorted(store.catalog)
        fresh = store.vectors.search_many(np.stack([store.vectors.vector(i) for i in ids]),
                                          None, KEPT, min_score=table.floor)
        for memory_id, hits in zip(ids, fresh):
            row = table.get(memory_id)
            assert row is not None, memory_id
            assert [i for i, _ in row] == [i for i, _ in hits], memory_id
            np.testing.assert_allclose([s for _, s in row], [s for _, s in hits], atol=1e-5)
            for j, (other, _) in enumerate(row):
                if other != memory_id:
                    assert table.verdicts_of(memory_id)[j] != UNKNOWN, (memory_id, other)
        checked = []
        monkeypatch.setattr("memnest_daemon.curation.conflicts.value_disagreement",
                            lambda a, b: checked.append(1) or value_disagreement(a, b))
        monkeypatch.setattr(store.vectors, "search_many", None)  # must not be needed
        found = conflicts(store, shown, SETTINGS, workspace)
        assert checked == [] and found
        monkeypatch.undo()
        assert found == _fresh(store, shown, workspace)
    finally:
        store.close()
