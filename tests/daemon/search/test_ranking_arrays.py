"""The arrays context ranking reads instead of walking memories one by one: the timeline of
who was stored next to whom, the table of each memory's index terms, and the columns of
what ranking reads of each memory. Each is checked against the plain definition under
random additions, changes and removals."""
import random
from datetime import datetime, timedelta
from types import SimpleNamespace

import numpy as np
from memnest_daemon.search.memory_columns import MemoryColumns
from memnest_daemon.search.term_table import TermTable
from memnest_daemon.search.timeline import Timeline

T0 = datetime(2025, 1, 1)
HOUR_US = 3600 * 10**6


def _neighbours_by_definition(memories: dict, memory_id: int, reach: int) -> list[int]:
    """Before (distance 1..reach) then after: same workspace, id order, each step within an
    hour of the previous one; 0 where there is none."""
    m = memories[memory_id]
    same = sorted(i for i, o in memories.items() if o.workspace == m.workspace)
    at = same.index(memory_id)
    out = []
    for step in (-1, 1):
        found, last, i = [], m, at + step
        while 0 <= i < len(same) and len(found) < reach:
            other = memories[same[i]]
            if abs((other.created_at - last.created_at).total_seconds()) > 3600:
                break
            found.append(other.id)
            last, i = other, i + step
        out += found + [0] * (reach - len(found))
    return out


def test_timeline_neighbours_follow_the_definition_through_changes():
    rng = random.Random(5)
    for trial in range(60):
        memories = {}
        timeline = Timeline()
        at = T0
        for _ in range(rng.randint(0, 6)):
            batch = []
            for _ in range(rng.randint(0, 12)):
                at += timedelta(minutes=rng.choice([1, 30, 59, 60, 61, 120]))
                memory_id = max(memories, default=0) + rng.randint(1, 3)
                memories[memory_id] = SimpleNamespace(
                    id=memory_id, created_at=at,
                    workspace=rng.choice(["/a", "/b"]) if trial % 2 else "/a")
                batch.append(memories[memory_id])
            if memories and rng.random() < 0.3:  # a memory moves to another workspace
                moved = memories[rng.choice(list(memories))]
                moved.workspace = "/c"
                batch.append(moved)
            timeline.put_many(batch)
            gone = rng.sample(sorted(memories), len(memories) // 4)
            timeline.remove_many(gone)
            for memory_id in gone:
                del memories[memory_id]
            for reach in (1, 2, 3):
                table = timeline.neighbours(reach, HOUR_US)
                for memory_id in memories:
                    assert table[memory_id].tolist() == \
                        _neighbours_by_definition(memories, memory_id, reach)


def test_timeline_ignores_ids_that_are_not_ids():
    timeline = Timeline.of([SimpleNamespace(id=i, created_at=T0, workspace="/a")
                            for i in (-3, 0, 1, 2)])
    assert timeline.neighbours(1, HOUR_US)[1:3].tolist() == [[0, 2], [1, 0]]


def test_memory_columns_follow_the_memories_through_changes():
    rng = random.Random(5)
    huge = "word " * 300_000  # a pasted text: counted, never parsed
    texts = ["short", "what changed?", "a b c d e f g", huge, "no? yes? maybe"]
    columns, memories = MemoryColumns(), {}
    for round_ in range(200):
        if memories and rng.random() < 0.3:
            gone = rng.sample(sorted(memories), k=min(len(memories), rng.randint(1, 3)))
            for memory_id in gone:
                del memories[memory_id]
            columns.remove_many(gone + [0, -1, 10**6])  # not ids, or ids never seen
        batch = [SimpleNamespace(id=rng.randint(1, 400), importance=rng.randint(1, 5),
                                 updated_at=T0 + timedelta(minutes=rng.randint(0, 10**5)),
                                 content=rng.choice(texts),
                                 tags=rng.choice([[], ["x"], ["x", "y"]]))
                 for _ in range(rng.randint(1, 6))]
        columns.put_many(batch + [SimpleNamespace(id=0, importance=9)])
        memories.update({m.id: m for m in batch})
        assert columns.differences(memories) == []
        for memory_id, m in memories.items():
            assert columns.words[memory_id] == m.content.count(" ") + 1
            assert columns.asks[memory_id] == ("?" in m.content)
            assert columns.tagged[memory_id] == bool(m.tags)
            assert columns.importance[memory_id] == m.importance
            assert columns.updated_us[memory_id] == \
                (m.updated_at - datetime(1970, 1, 1)) // timedelta(microseconds=1)
    columns.importance[next(iter(memories))] += 1
    assert columns.differences(memories) == ["importance"]
    assert not columns.present[0]


def test_term_table_answers_as_sets_would_through_changes_and_compaction():
    rng = random.Random(8)
    words = [f"w{i}" for i in range(200)]
    table, truth = TermTable(), {}
    table.COMPACT_SLACK = 100
    compactions = []
    compact = table._compact
    table._compact = lambda: (compactions.append(1), compact())
    for round_ in range(300):
        batch = {rng.randint(1, 400): set(rng.sample(words, rng.randint(0, 30)))
                 for _ in range(rng.randint(1, 20))}
        table.put(batch)
        truth.update(batch)
        gone = rng.sample(sorted(truth), min(len(truth), rng.randint(0, 15)))
        table.remove(gone + [999_999, -4])  # unknown and impossible ids are ignored
        for memory_id in gone:
            del truth[memory_id]
        if round_ % 30:
            continue
        for memory_id in range(0, 402):
            assert set(table.of(memory_id)) == truth.get(memory_id, set())
        for word in rng.sample(words, 10):
            assert table.frequency(word) == sum(word in t for t in truth.values())
        asked = rng.sample(words, 5) + ["never-seen"]
        ids = np.array(list(range(0, 402)) + [10**9, -1], dtype=np.int64)
        bits = table.bits(asked, ids).tolist()
        for memory_id, got in zip(ids.tolist(), bits):
            want = sum(1 << j for j, w in enumerate(asked) if w in truth.get(memory_id, ()))
            assert got == want
    assert len(compactions) > 5  # removed memories' terms were dropped, answers unchanged


def test_term_table_bits_cover_sixty_four_terms():
    table = TermTable()
    words = [f"t{i}" for i in range(64)]
    table.put({1: set(words), 2: {"t63"}, 3: set()})
    assert table.bits(words, np.array([1, 2, 3])).tolist() == [2**64 - 1, 2**63, 0]
