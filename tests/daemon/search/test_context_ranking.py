"""The pieces of the `context` fusion mode: query analysis, the index bookkeeping it relies on,
neighbour context and term coverage (in process, with hand-made vectors so only the ranking
logic is under test); through the daemon: tests/test_search_through_daemon.py."""
from datetime import datetime, timedelta

import numpy as np
import pytest
from memnest_daemon.search import ranking as search
from memnest_daemon.core.config import FUSION_MODES, Settings
from memnest_daemon.search.indexes import KeywordIndex, VectorIndex
from memnest_daemon.search.query_analysis import STOPWORDS, analyse, keyword_terms
from support import rank_context as _rank
from support import ranking_memory as _memory
from support import ranking_store as _store
from support import unit_vector as _unit

T0 = datetime(2025, 3, 1, 12, 0, 0)
DIM = 8


# -- query analysis --------------------------------------------------------------------------

def test_keyword_terms_drop_function_words():
    assert keyword_terms("What did Caroline research?") == ["caroline", "research"]
    assert keyword_terms("When did Melanie paint a sunrise?") == ["melanie", "paint", "sunrise"]
    # Nothing but function words: keep them rather than search for nothing.
    assert keyword_terms("what is it?") == ["what", "is", "it"]
    assert {"what", "did", "her", "the"} <= STOPWORDS


def test_names_tag_matches_whole_words_and_phrases():
    q = analyse("What is Caroline's relationship status with the mental-health team?")
    assert q.names_tag("caroline")
    assert q.names_tag("Mental Health")       # a phrase, spelled differently
    assert not q.names_tag("carol")           # part of a word is not a mention
    assert not q.names_tag("the")             # function words never count
    assert not q.names_tag("s")               # nor one-letter tags
    assert not q.names_tag("health team x")


# -- index bookkeeping -----------------------------------------------------------------------

def test_keyword_index_tracks_terms_and_document_frequency():
    k = KeywordIndex()
    k.upsert_many([_memory(1, "Painting sunsets at the lake"), _memory(2, "Lake swimming")])
    assert k.analyse("Paintings of lakes") == ["paint", "of", "lake"]
    assert "paint" in k.terms_of(1) and "lake" in k.terms_of(2)
    assert k.idf("lake") < k.idf("paint")     # in both memories vs in one
    k.upsert_many([_memory(1, "Pottery class on Tuesday")])  # content replaced
    assert "paint" not in k.terms_of(1) and k.idf("paint") == 0.0
    k.remove_many([2])
    assert not k.terms_of(2) and k.idf("lake") == 0.0


def test_vector_index_ids_and_cosines():
    v = VectorIndex(DIM)
    for i in (5, 2, 9):
        v.upsert(i, _unit(i))
    v.upsert(5, _unit(1))                     # re-embedded
    five, nine, unknown = v.scores(_unit(1)).cosines(np.array([5, 9, 12345])).tolist()
    assert five == pytest.approx(1.0) and nine < 1.0 and unknown == 0.0
    v.remove(2)
    assert v.ids() == {5, 9} and v.scores(_unit(2)).cosines(np.array([2]))[0] == 0.0


# -- the context mode, in process ------------------------------------------------------------

DIALOGUE = [
    "Mel: We went to a concert on Saturday for my daughter's birthday.",
    "Caro: How fun! Who was playing?",
    "Mel: Matt Patterson, his voice was amazing.",
    "Caro: I adopted a guinea pig called Oscar.",
    "Mel: Pottery class starts next week.",
]


def test_a_memory_next_to_a_match_is_lifted_by_it():
    # The answer ("Matt Patterson") shares no word with the question; its neighbours do.
    store = _store([_memory(i, t, minutes=i * 0.1) for i, t in enumerate(DIALOGUE, 1)])
    ranked = _rank(store, "Who played at the concert for the birthday?")
    order = [r.memory.id for r in ranked]
    assert set(order[:3]) == {1, 2, 3}
    answer = next(r for r in ranked if r.memory.id == 3)
    assert answer.parts["context"] > 0 and answer.parts["keyword"] == 0
    assert order.index(3) < order.index(4)
    legacy = search.rank(store, "Who played at the concert for the birthday?", _unit(7),
                         search.SearchFilter(workspace="/ws"), 100, "legacy", 60)
    assert 3 not in [r.memory.id for r in legacy[:3]]


def test_neighbours_stop_at_an_hour_gap_and_at_other_workspaces():
    memories = [_memory(1, "Concert on Saturday for the birthday"),
                _memory(2, "Matt Patterson sang", minutes=90),              # an hour later
                _memory(3, "Pottery on Sunday", workspace="/other", minutes=90.1),
                _memory(4, "Oscar the guinea pig", minutes=90.2)]
    store = _store(memories)
    ranked = {r.memory.id: r for r in _rank(store, "concert birthday")}
    assert 2 not in ranked or ranked[2].parts["context"] == 0
    before_1, before_2, after_1, after_2 = store.timeline.neighbours(
        2, 3600 * 10**6)[2].tolist()
    assert (before_1, before_2, after_1, after_2) == (0, 0, 4, 0)  # skips /other; 1 is too
    #                                                               far back in time


def test_coverage_counts_query_terms_found_around_a_memory():
    memories = [_memory(1, "Caro: What inspired the painting?"),
                _memory(2, "Mel: A visit to the LGBTQ center.", minutes=0.1),
                _memory(3, "Mel: Unrelated chatter about weather.", minutes=0.2),
                _memory(4, "Mel: More weather.", minutes=0.3),
                _memory(5, "Mel: Even more weather.", minutes=0.4)]
    store = _store(memories)
    ranked = {r.memory.id: r for r in _rank(store, "inspired painting center")}
    assert ranked[2].parts["coverage"] == pytest.approx(search.COVERAGE_WEIGHT)
    assert ranked[3].parts["coverage"] == pytest.approx(search.COVERAGE_WEIGHT)  # 2 steps
    assert 0 < ranked[4].parts["coverage"] < ranked[2].parts["coverage"]  # sees "center"
    assert ranked[5].parts["coverage"] == 0   # nothing within two steps


def test_a_named_tag_gives_a_small_lift():
    memories = [_memory(1, "Went hiking in the hills", tags=["melanie"]),
                _memory(2, "Went hiking in the hills again", tags=["caroline"], minutes=120)]
    ranked = {r.memory.id: r for r in _rank(_store(memories), "Where did Caroline hike?")}
    assert ranked[2].parts["tag"] == search.TAG_BOOST and "tag" not in ranked[1].parts


def test_a_memory_s_form_nudges_its_own_score_within_bounds():
    """A question is not an answer, and a longer memory holds more facts, up to the cap: the
    form part ranks the statement above the question that shares its words, keeps the
    candidates' median at 0 (the recall hook's floor compares scores), and cannot grow
    with a memory's length past the cap, however long a stored text is."""
    tuning = search.DEFAULT_TUNING
    huge = "billing " * 200_000  # a hostile or pasted text: counted, never parsed
    memories = [_memory(1, "Which database does billing use?"),
                _memory(2, "Billing uses the Postgres database in eu-west.", minutes=120),
                _memory(3, "Billing database " + huge, minutes=240),
                _memory(4, "Billing database " + "x " * 60, minutes=360)]
    vectors = {1: _unit(5), 2: _unit(5), 3: _unit(5), 4: _unit(5)}  # equally near
    ranked = {r.memory.id: r for r in _rank(_store(memories, vectors), "billing database",
                                            vector=_unit(5))}
    form = {i: r.parts["form"] for i, r in ranked.items()}
    assert form[2] - form[1] == pytest.approx(tuning.question, abs=0.05)
    assert form[3] == pytest.approx(form[4])  # both past the cap
    assert sorted(form.values())[1] <= 0.0 <= sorted(form.values())[2]  # median at 0
    spread = tuning.length * np.log1p(tuning.length_cap) + tuning.question
    assert max(form.values()) - min(form.values()) <= spread
    assert ranked[2].score > ranked[1].score


def test_filters_still_apply_to_neighbours():
    memories = [_memory(1, "Concert for the birthday"),
                _memory(2, "Matt Patterson sang", minutes=0.1)]
    memories[1].category = "decision"
    store = _store(memories)
    ranked = search.rank(store, "concert birthday", _unit(7),
                         search.SearchFilter(workspace="/ws", category="general"), 100,
                         "context", 60)
    assert [r.memory.id for r in ranked] == [1]


def test_workspaces_stay_apart_in_a_shared_database():
    memories = [_memory(1, "Deploy with Helm charts", workspace="/ws"),
                _memory(2, "Helm charts for deploys, version 3", workspace="/other", minutes=0.1),
                _memory(3, "Helm deploy rollback notes", workspace="/other", minutes=0.2),
                _memory(4, "Lunch at noon", workspace="/ws", minutes=0.3)]
    store = _store(memories)
    for _ in range(2):                        # the second time from the cached layout
        assert {r.memory.workspace for r in _rank(store, "helm deploy")} == {"/ws"}
    everywhere = _rank(store, "helm deploy", workspace=None)
    assert {r.memory.id for r in everywhere} == {1, 2, 3, 4}


def test_context_is_the_default_fusion(monkeypatch):
    monkeypatch.delenv("MEMORY_FUSION", raising=False)
    assert Settings.from_env().fusion == "context" == search.DEFAULT_FUSION
    for mode in FUSION_MODES:
        monkeypatch.setenv("MEMORY_FUSION", mode)
        assert Settings.from_env().fusion == mode
    monkeypatch.setenv("MEMORY_FUSION", "bogus")
    with pytest.raises(SystemExit):
        Settings.from_env()


# -- end to end ------------------------------------------------------------------------------

def _reference_ranking(store, query: str, vector, flt) -> list[tuple[int, float, dict]]:
    """The context ranking written out memory by memory, as the module doc states it: what
    rank_context computes with arrays must come out the same."""
    catalog, keywords = store.catalog, store.keywords
    q = search.analyse(query)
    scores = store.vectors.scores(vector)
    allowed = {i for i, m in catalog.items() if flt.admits(m)}
    vector_hits = scores.best(allowed, 100)
    keyword_hits = [(i, s) for i, s in keywords.search(" ".join(q.keywords), 100,
                                                       flt.workspace, None, flt.tags or None)
                    if i in allowed]
    best = max((s for _, s in keyword_hits), default=0.0)
    keyword = {i: s / best for i, s in keyword_hits} if best > 0 else {}
    candidates = list(dict.fromkeys([i for i, _ in vector_hits] +
                                    [i for i, _ in keyword_hits]))
    weights = {t: keywords.idf(t) for t in dict.fromkeys(keywords.analyse(
        " ".join(q.keywords)))}
    weights = {t: w for t, w in weights.items() if w > 0}

    def window(memory_id):  # (distance, id): same workspace, id order, an hour per step
        m, out = catalog[memory_id], []
        same = sorted(i for i, o in catalog.items() if o.workspace == m.workspace)
        at = same.index(memory_id)
        for step in (-1, 1):
            last, i = m, at + step
            while 0 <= i < len(same) and abs(i - at) <= 2:
                other = catalog[same[i]]
                if abs((other.created_at - last.created_at).total_seconds()) > 3600:
                    break
                out.append((abs(i - at), other.id))
                last, i = other, i + step
        return out

    ids, matrix = store.vectors.rows()
    row_of = dict(zip(ids.tolist(), range(len(ids))))
    mean = matrix.astype(np.float64).mean(axis=0)  # the corpus mean, taken from both sides
    centred_query = vector.astype(np.float64) - mean

    def centred_cosine(memory_id):  # the cosine of the centred vectors, at the plain level
        x = matrix[row_of[memory_id]].astype(np.float64) - mean
        cosine = x @ centred_query / (np.linalg.norm(x) * np.linalg.norm(centred_query))
        return float(vector @ mean + np.linalg.norm(centred_query)
                     * np.sqrt(1 - mean @ mean) * cosine)

    def base(memory_id):
        cosine = centred_cosine(memory_id)
        parts = {"vector": search.CONTEXT_VECTOR_WEIGHT * max(0.0, cosine),
                 "keyword": search.CONTEXT_KEYWORD_WEIGHT * keyword.get(memory_id, 0.0)}
        if weights:
            seen = set(keywords.terms_of(memory_id))
            for _, other in window(memory_id):
                seen |= set(keywords.terms_of(other))
            parts["coverage"] = search.COVERAGE_WEIGHT * sum(
                w for t, w in weights.items() if t in seen) / sum(weights.values())
        if any(q.names_tag(tag) for tag in catalog[memory_id].tags):
            parts["tag"] = search.TAG_BOOST
        return sum(parts.values()), parts

    strongest = sorted(candidates, key=lambda i: (-base(i)[0], -i))[:search.EXPAND_FROM]
    for i in strongest:
        for _, other in window(i):
            if other not in candidates and flt.admits(catalog[other]):
                candidates.append(other)
    now = search.utcnow()
    tuning = search.DEFAULT_TUNING
    words = {i: min(catalog[i].content.count(" ") + 1, tuning.length_cap) for i in candidates}
    middle = float(np.median(list(words.values())))
    out = []
    for i in candidates:
        score, parts = base(i)
        lift = max([0.0] + [search.NEIGHBOUR_WEIGHTS[d - 1] * base(o)[0]
                            for d, o in window(i)])
        m = catalog[i]
        extra = {"importance": search.IMPORTANCE_WEIGHT * (m.importance - 1) / 4,
                 "recency": search.RECENCY_WEIGHT * search._recency(m, now),
                 "form": tuning.length * (np.log1p(words[i]) - np.log1p(middle))
                 - tuning.question * ("?" in m.content)}
        out.append((i, score + lift + extra["importance"] + extra["recency"] + extra["form"],
                    {**parts, "context": lift, **extra}))
    return sorted(out, key=lambda r: (-r[1], -r[0]))


def test_the_array_ranking_equals_the_formula_memory_by_memory(monkeypatch):
    monkeypatch.setattr(search, "utcnow", lambda: T0 + timedelta(days=3))
    rng = np.random.default_rng(11)
    words = "lake paint concert guinea pig pottery birthday hike camp book mel".split()
    memories = [_memory(i, " ".join(rng.choice(words, size=rng.integers(3, 9))),
                        workspace="/ws" if i % 7 else "/other",
                        tags=["mel"] if i % 17 == 0 else (),
                        minutes=i * 5 + (600 if i % 40 == 0 else 0)) for i in range(1, 301)]
    for m in memories[::11]:
        m.importance = 5
    store = _store(memories, {m.id: _unit(int(rng.integers(0, 60))) for m in memories})
    for flt in (search.SearchFilter(workspace="/ws"),
                search.SearchFilter(workspace="/ws", tags=["mel"]),
                search.SearchFilter(workspace="/ws", min_importance=4)):
        for seed in range(25):
            query = " ".join(rng.choice(words, size=int(rng.integers(1, 5))))
            vector = _unit(seed % 60)
            got = [(r.memory.id, r.score, r.parts) for r in search.rank(
                store, query, vector, flt, 100, "context", 60)]
            expected = _reference_ranking(store, query, vector, flt)
            assert [i for i, _, _ in got] == [i for i, _, _ in expected]
            # 1e-6: the index's cosines come from float32 products, the reference's centred
            # cosine from float64 vectors
            for (_, score, parts), (_, want, want_parts) in zip(got, expected):
                assert score == pytest.approx(want, abs=1e-6)
                assert parts.keys() == want_parts.keys()
                assert all(parts[k] == pytest.approx(want_parts[k], abs=1e-6)
                           for k in parts)
