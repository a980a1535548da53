"""A workspace ranked with the personal tier beside it (search/beside.py): one context
ranking over both stores' indexes. Beside an empty tier it ranks as the store alone; a tier
beside an empty workspace ranks as that tier alone; the two tiers' ids never stand for each
other (both number their memories from 1); filters hold in both."""
import random
from dataclasses import replace

import pytest
from memnest_daemon.search import ranking
from memnest_daemon.search.beside import beside
from support import ranking_memory, ranking_store

HERE, THERE = "/ws", "/user/personal"
WORDS = ("pytest ruff deploy branch cache schema index worker token queue release docs "
         "review fixture migration").split()


def _memories(rng: random.Random, n: int, workspace: str, first_id: int = 1) -> list:
    return [ranking_memory(first_id + i, " ".join(rng.sample(WORDS, rng.randint(2, 6))),
                           workspace, tags=rng.sample(["ops", "alice"], rng.randint(0, 1)),
                           minutes=rng.choice([0, 5, 90]) * i)
            for i in range(n)]


def _rank(store, query, flt, vector=None):
    from support import unit_vector
    vector = unit_vector(3) if vector is None else vector
    return ranking.rank(store, query, vector, flt, pool=30, mode="context", rrf_k=60)


def _view(here, there, pool=30):
    return beside(here, there, THERE, pool)


def _seen(ranked) -> list[tuple[str, int, str, float]]:
    return [(r.memory.workspace, r.memory.id, r.memory.content, round(r.score, 9))
            for r in ranked]


@pytest.mark.parametrize("seed", range(8))
def test_beside_an_empty_tier_a_store_ranks_as_alone(seed):
    rng = random.Random(seed)
    here = ranking_store(_memories(rng, rng.randint(1, 60), HERE))
    query = " ".join(rng.sample(WORDS, 3))
    flt = ranking.SearchFilter(workspace=HERE)
    alone = _rank(here, query, flt)
    both = _rank(_view(here, ranking_store([])), query, replace(flt, also=THERE))
    assert _seen(both) == _seen(alone)


@pytest.mark.parametrize("seed", range(8))
def test_a_tier_beside_an_empty_workspace_ranks_as_alone(seed):
    rng = random.Random(100 + seed)
    there = ranking_store(_memories(rng, rng.randint(1, 60), THERE))
    query = " ".join(rng.sample(WORDS, 3))
    alone = _rank(there, query, ranking.SearchFilter(workspace=THERE))
    both = _rank(_view(ranking_store([]), there), query,
                 ranking.SearchFilter(workspace=HERE, also=THERE))
    assert _seen(both) == _seen(alone)


def test_the_same_ids_in_both_tiers_stay_apart():
    here = ranking_store([ranking_memory(1, "deploy the worker with the release script", HERE),
                          ranking_memory(2, "the queue token rotates weekly", HERE, minutes=1)])
    there = ranking_store([ranking_memory(1, "I prefer pytest fixtures over setUp", THERE),
                           ranking_memory(2, "answer in British English", THERE, minutes=1)])
    flt = ranking.SearchFilter(workspace=HERE, also=THERE)
    found = _seen(_rank(_view(here, there), "pytest fixtures deploy worker", flt))
    assert {(w, i, c) for w, i, c, _ in found} >= {
        (HERE, 1, "deploy the worker with the release script"),
        (THERE, 1, "I prefer pytest fixtures over setUp")}
    # neighbours never cross tiers: the personal memories' are personal, the workspace's
    # the workspace's
    view = _view(here, there)
    table, offset = view.timeline.neighbours(2, 3600 * 10**6), view._joined.offset
    assert (table[offset + 1] == [0, 0, offset + 2, 0]).all()
    assert (table[1] == [0, 0, 2, 0]).all()
    assert ((table[:offset] == 0) | (table[:offset] < offset)).all()
    assert ((table[offset:] == 0) | (table[offset:] >= offset)).all()


def test_a_filter_holds_in_both_tiers():
    rng = random.Random(7)
    here_memories = _memories(rng, 40, HERE)
    there_memories = _memories(rng, 40, THERE)
    here, there = ranking_store(here_memories), ranking_store(there_memories)
    flt = ranking.SearchFilter(workspace=HERE, also=THERE, tags=["alice"])
    found = _rank(_view(here, there), " ".join(WORDS[:6]), flt)
    assert found and all("alice" in r.memory.tags for r in found)
    assert {r.memory.workspace for r in found} == {HERE, THERE}


def test_the_tier_beside_gives_at_most_its_pool():
    rng = random.Random(9)
    here = ranking_store(_memories(rng, 50, HERE))
    there = ranking_store(_memories(rng, 50, THERE))
    flt = ranking.SearchFilter(workspace=HERE, also=THERE)
    view = _view(here, there, pool=3)
    from support import unit_vector
    theirs = [i for i, _ in view.vectors.scores(unit_vector(3)).best(None, 30)
              if i >= view._joined.offset]
    assert len(theirs) == 3
    assert len([i for i, _ in view.keywords.search(" ".join(WORDS), 30, HERE)
                if i >= view._joined.offset]) <= 3
    assert _rank(view, " ".join(WORDS[:4]), flt)


def test_a_write_to_either_store_is_seen_at_once():
    here = ranking_store([ranking_memory(1, "deploy the worker", HERE)])
    there = ranking_store([ranking_memory(1, "I prefer pytest", THERE)])
    flt = ranking.SearchFilter(workspace=HERE, also=THERE)
    assert len(_rank(_view(here, there), "pytest deploy", flt)) == 2
    added = ranking_memory(2, "pytest runs in the release pipeline", THERE, minutes=500)
    there.catalog[2] = added
    there.keywords.upsert_many([added])
    from support import unit_vector
    there.vectors.upsert(2, unit_vector(2002))
    there.timeline.put_many([added])
    there.columns.put_many([added])
    there.per_workspace[THERE] += 1
    there.version += 1
    found = {(r.memory.workspace, r.memory.id) for r in
             _rank(_view(here, there), "pytest release pipeline", flt)}
    assert (THERE, 2) in found
