"""The constants of context ranking in one value, so a bench can choose them on some
conversations and report them on others (bench/locomo.py, leave-one-out) without touching the
daemon's defaults, which are the figures users get. Why each default is what it is:
bench/RESULTS.md#retrieval-quality."""
from dataclasses import dataclass


@dataclass(frozen=True)
class ContextTuning:
    vector: float = 0.65     # weight of the cosine channel
    keyword: float = 0.35    # weight of BM25 divided by the query's best
    coverage: float = 0.35   # share of the query's terms (IDF-weighted) in the memory's window
    tag: float = 0.08        # the query names one of the memory's tags
    neighbours: tuple[float, float] = (0.6, 0.4)  # share of the best neighbour's score, d=1,2
    centre: bool = True      # cosine after removing the corpus mean (indexes.Scores.centred)
    length: float = 0.1      # times log(1 + words), relative to the candidates' median
    length_cap: int = 48     # words counted at most
    question: float = 0.08   # taken off a memory that asks ('?'): a question is not an answer


DEFAULT_TUNING = ContextTuning()
