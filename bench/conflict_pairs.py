"""How well memnest tells a contradiction from a paraphrase, on a labelled corpus of pairs.

tests/data/conflict_pairs.jsonl holds pairs of memory texts written for this project, each
labelled contradiction_digits, contradiction_words (same subject, another value), paraphrase,
different_subject or complementary. For each pair this prints what two rules decide:

- `value_disagreement(a, b)`: the flag a search or store shows (for pairs whose cosine is at
  least MEMORY_CONFLICT_VALUE_FLOOR, as there). A true positive is a pair labelled
  contradiction_*. Printed: precision, recall, and the decision per label.
- merging: would storing b after a merge it into a (ingest.merge_candidate: cosine of the
  offline model's embeddings at or above MEMORY_DEDUP_THRESHOLD, same category, no tags, and
  the value gate `disagree(a, b)`)? Printed: contradictions merged (target 0) and paraphrases
  merged.

The same figures are printed for the rule of another commit (--baseline, default the last
one before the rule changed), loaded from git, so that a change shows its effect.

Run:  .venv/bin/python bench/conflict_pairs.py [--baseline REV] [--show-misses]
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "conflict_pairs.jsonl"
POSITIVE = ("contradiction_digits", "contradiction_words")
BASELINE = "4f7c918"  # the rule before issue 16 (digits only)


def load_pairs(path: Path = CORPUS) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rule_at(revision: str):
    """daemon/values.py as it was at `revision`, as a module."""
    source = subprocess.run(["git", "show", f"{revision}:daemon/values.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "values_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("values_then", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(rule, pairs: list[dict], similarity: list[float], threshold: float,
          floor: float) -> dict:
    """`floor`: a search or store flags a pair only at or above this cosine
    (MEMORY_CONFLICT_VALUE_FLOOR); `threshold`: it merges from this one."""
    flagged = [s >= floor and bool(rule.value_disagreement(p["a"], p["b"]))
               for p, s in zip(pairs, similarity)]
    truth = [p["label"] in POSITIVE for p in pairs]
    tp = sum(f and t for f, t in zip(flagged, truth))
    fp = sum(f and not t for f, t in zip(flagged, truth))
    fn = sum(t and not f for f, t in zip(flagged, truth))
    merged = [s >= threshold and not rule.disagree(p["a"], p["b"])
              for p, s in zip(pairs, similarity)]
    by_label = Counter(p["label"] for p in pairs)
    flags = Counter(p["label"] for p, f in zip(pairs, flagged) if f)
    merges = Counter(p["label"] for p, m in zip(pairs, merged) if m)
    return {"precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0,
            "flagged": flags, "merged": merges, "by_label": by_label,
            "flags": flagged, "merges": merged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare with")
    parser.add_argument("--corpus", type=Path, default=CORPUS,
                        help="pairs to score (tests/data/conflict_pairs_heldout.jsonl was "
                             "written without looking at the rule, and never tuned on)")
    parser.add_argument("--show-misses", action="store_true",
                        help="print each pair the current rule gets wrong")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("MEMORY_EMBEDDING_MODEL", "memnest/all-MiniLM-L6-v2-int8")
    from memnest_daemon.curation import values
    from memnest_daemon.core.config import Settings
    from memnest_daemon.model.embedder import Embedder

    pairs = load_pairs(args.corpus)
    settings = Settings.from_env()
    embedder = Embedder(os.environ["MEMORY_EMBEDDING_MODEL"])
    va = embedder.embed([p["a"] for p in pairs])
    vb = embedder.embed([p["b"] for p in pairs])
    similarity = [float(x @ y) for x, y in zip(va, vb)]
    threshold = settings.dedup_threshold
    labels = ", ".join(f"{k} {v}" for k, v in sorted(Counter(p["label"] for p in pairs).items()))
    print(f"{args.corpus.name}: {len(pairs)} pairs ({labels}); "
          f"merge threshold {threshold}; "
          f"{sum(s >= threshold for s in similarity)} pairs at or above it")
    results = {}
    for name, rule in (("baseline " + args.baseline, rule_at(args.baseline)),
                       ("now", values)):
        r = results[name] = score(rule, pairs, similarity, threshold,
                                  settings.conflict_value_floor)
        contradictions = sum(r["merged"][label] for label in POSITIVE)
        print(f"\n{name}: value_disagreement precision {r['precision']:.3f}, "
              f"recall {r['recall']:.3f}; contradictions merged {contradictions}; "
              f"paraphrases merged {r['merged']['paraphrase']} of "
              f"{r['by_label']['paraphrase']}")
        for label in sorted(r["by_label"]):
            print(f"  {label:22} flagged {r['flagged'][label]:3} of {r['by_label'][label]:3}"
                  f"   merged {r['merged'][label]:3}")
    if args.show_misses:
        now = results["now"]
        for p, f, m, s in zip(pairs, now["flags"], now["merges"], similarity):
            wrong_flag = f != (p["label"] in POSITIVE)
            wrong_merge = m and p["label"] in POSITIVE
            if wrong_flag or wrong_merge:
                print(f"\n[{p['label']}] flagged={f} merged={m} cos={s:.3f}\n  a: {p['a']}\n"
                      f"  b: {p['b']}")


if __name__ == "__main__":
    main()
