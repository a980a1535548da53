"""The daemon's embedder in process, with the offline model."""
import time

import numpy as np
import pytest

from memnest_daemon.model import embedder as embedder_module
from memnest_proto.contract import OFFLINE_MODEL
from memnest_daemon.model.embedder import Embedder


@pytest.fixture(scope="module")
def model():
    return Embedder(OFFLINE_MODEL)


def test_repeated_queries_come_from_the_cache(model, monkeypatch):
    monkeypatch.setattr(embedder_module, "QUERY_CACHE_SIZE", 3)
    first = model.embed_one("which port does staging use?")
    again = model.embed_one("which port does staging use?")
    assert again is first                      # no second model run
    assert not first.flags.writeable           # shared, so nobody may change it
    assert np.allclose(first, model.embed(["which port does staging use?"])[0], atol=1e-6)
    for n in range(5):
        model.embed_one(f"question {n}")
    assert len(model._cache) == 3              # bounded: the oldest went first
    assert model.embed_one("which port does staging use?") is not first


def test_batches_keep_their_order_whatever_the_lengths(model):
    texts = ["a much longer sentence about the deploy pipeline and its caches", "short",
             "medium length text here"]
    together = model.embed(texts)
    for text, vector in zip(texts, together):
        assert np.allclose(vector, model.embed([text])[0], atol=1e-5)
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_the_session_stops_spinning_after_each_run_and_embeds_as_before(model):
    """The session is rebuilt with onnxruntime's threads told to stop spinning when a run
    ends (embedder._stop_spinning_after_runs): the same model, the same vectors."""
    session = model._model.model.model
    assert session.get_session_options().get_session_config_entry(
        "session.force_spinning_stop") == "1"
    texts = ["the deploy timeout is 30 seconds", "which region hosts staging?"]
    from fastembed import TextEmbedding  # the session fastembed itself builds, untouched
    plain = TextEmbedding(model_name=OFFLINE_MODEL,
                          specific_model_path=str(embedder_module.prepare_offline_model_dir()))
    expected = np.stack(list(plain.embed(texts)))
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(model.embed(texts), expected, atol=1e-6)


def test_queries_asked_at_once_are_embedded_together_and_as_alone(model, monkeypatch):
    """Threads asking while the model runs wait and then share one run: each gets the
    vector it would have got alone, and a run that fails fails no one else's query."""
    import threading

    queries = [f"which {word} does the deploy use, question {n}?"
               for n, word in enumerate("port host queue bucket region cluster".split())]
    alone = {q: np.array(model.embed([q])[0]) for q in queries}
    model._cache.clear()
    runs, real = [], model._embed_held
    gate = threading.Event()

    def held(texts):
        runs.append(list(texts))
        gate.wait(5)  # the first run lasts until every thread is waiting
        if "boom" in texts:
            raise RuntimeError("model failure")
        return real(texts)

    monkeypatch.setattr(model, "_embed_held", held)
    got, failed = {}, []

    def ask(q):
        try:
            got[q] = model.embed_one(q)
        except RuntimeError:
            failed.append(q)

    threads = [threading.Thread(target=ask, args=(q,)) for q in ["boom"] + queries]
    threads[0].start()
    while not runs:
        time.sleep(0.01)
    for t in threads[1:]:
        t.start()
    while len(model._waiting) < len(queries):
        time.sleep(0.01)
    gate.set()
    for t in threads:
        t.join(10)
    assert failed == ["boom"] and len(runs) == 2 and sorted(runs[1]) == sorted(queries)
    for q in queries:
        assert np.allclose(got[q], alone[q], atol=1e-5), q
