"""Leave-one-conversation-out for bench/locomo.py: context ranking's constants are chosen on
all conversations but one and reported on that one.

Runs in this process on the workspaces bench/locomo.py ingested (its daemon stopped first),
through the daemon's own ranking code (`search.ranking.rank` with a `ContextTuning`), so the
default point reproduces the daemon's figures. For each conversation the grid point with the
best R@20 + MRR@20 over the others is picked, and that conversation's figures at that point
are its held-out figures; pooled, they are the leave-one-out figure the issue's targets
name. The daemon's own defaults (DEFAULT_TUNING) are printed beside them.
"""
import itertools
import os
from dataclasses import asdict, replace
from pathlib import Path

import memnest_daemon  # noqa: F401  (sets the BLAS thread count before numpy loads)
from memnest_daemon.core.config import Settings
from memnest_daemon.model.embedder import Embedder
from memnest_daemon.search.ranking import SearchFilter, rank
from memnest_daemon.search.tuning import DEFAULT_TUNING, ContextTuning
from memnest_daemon.store.registry import StoreRegistry

# The constants the grid may choose; every other one stays at its default.
GRID: dict[str, tuple] = {
    "centre": (False, True),
    "vector": (0.5, 0.65, 0.8),  # keyword takes the rest
    "tag": (0.04, 0.08, 0.12),
    "coverage": (0.2, 0.35),
    "form": ((0.0, 0.0), (0.1, 0.08), (0.15, 0.08)),  # (length, question); off first
}


def grid_points() -> list[ContextTuning]:
    points = []
    for values in itertools.product(*GRID.values()):
        chosen = dict(zip(GRID, values))
        chosen["keyword"] = round(1.0 - chosen["vector"], 6)
        chosen["length"], chosen["question"] = chosen.pop("form")
        points.append(replace(DEFAULT_TUNING, **chosen))
    if DEFAULT_TUNING not in points:
        points.append(DEFAULT_TUNING)
    return points


def label(tuning: ContextTuning) -> str:
    changed = {k: v for k, v in asdict(tuning).items()
               if v != getattr(ContextTuning(), k) or k in GRID
               or k in ("length", "question")}
    return " ".join(f"{k}={v}" for k, v in changed.items() if k != "keyword")


class InProcess:
    """The daemon's stores and model in this process, over bench/locomo.py's workspaces."""

    def __init__(self, model: str):
        os.environ["MEMORY_EMBEDDING_MODEL"] = model
        self.settings = Settings.from_env()
        self.embedder = Embedder(self.settings.embedding_model)
        self.stores = StoreRegistry(self.embedder.name, self.embedder.dim,
                                    self.settings.buffer_pool_mb, self.settings.max_db_gb)
        self.opened: list = []

    def rows(self, conv: dict, workspace: Path, id_to_dia: dict, tunings: list,
             score_question) -> list[list]:
        """Per tuning: [(category, score_question result)] over the conversation."""
        store = self.stores.acquire(str(workspace), "")
        self.opened.append(store)
        vectors = self.embedder.embed([q for q, _, _ in conv["questions"]])
        flt = SearchFilter(workspace=str(workspace))
        out = []
        with store.reading():
            for tuning in tunings:
                rows = []
                for (question, category, gold), vector in zip(conv["questions"], vectors):
                    ranked = rank(store, question, vector, flt,
                                  pool=self.settings.search_candidates, mode="context",
                                  rrf_k=self.settings.rrf_k, tuning=tuning)
                    rows.append((category, score_question(
                        [id_to_dia.get(r.memory.id, []) for r in ranked[:20]], gold)))
                out.append(rows)
        return out

    def close(self) -> None:
        for store in self.opened:
            self.stores.release(store)
        self.stores.close_all()


def leave_one_out(per_conv: dict[str, list[list]], tunings: list, aggregate) -> dict:
    """per_conv: name -> per tuning, rows. Returns per conversation the point chosen on the
    others and its rows there, and the default's rows."""
    default = tunings.index(DEFAULT_TUNING)
    out = {}
    for name in per_conv:
        others = [n for n in per_conv if n != name]

        def fit(t: int) -> float:
            table = aggregate([r for n in others for r in per_conv[n][t]])["overall"]
            return table["r@20"] + table["mrr"]

        best = max(range(len(tunings)), key=lambda t: (fit(t), t == default))
        out[name] = {"chosen": tunings[best], "rows": per_conv[name][best],
                     "default_rows": per_conv[name][default]}
    return out
