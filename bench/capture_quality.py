"""How well the capture judge (daemon/curation/capture.py) tells memories worth keeping from junk.

tests/data/capture/candidates.jsonl holds candidate memories of the shapes agents store at
the end of a turn, labelled keep or junk (with a kind) before the rule was written, a third
of each kind held out and never tuned on; existing.jsonl holds memories already stored,
which some candidates restate in other words (junk) or add a new fact to (keep). Each
candidate is judged as memory_store judges it: `capture.judge` with its nearest existing
memories by the offline model's cosine (the model the tests use).

Printed for tune, held_out and both: junk kept % (junk the judge would store), good lost %
(keep it would refuse or fold into another memory), the misclassified lines, and how long
judging took. `--locomo` also counts LOCOMO dialogue turns (../shared/locomo, as
bench/locomo.py stores them) that the judge would refuse: people's talk, not an agent's
junk, which the LOCOMO benchmarks store through memory_store.

Run:  .venv/bin/python bench/capture_quality.py [--locomo]
"""
import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "data" / "capture"
NEIGHBOURS = 5  # as many as memory_store asks the vector index for


def load(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def verdicts(candidates: list[dict], existing: list[dict], embed) -> list:
    """capture.judge of each candidate, with its nearest existing memories."""
    import numpy as np
    from memnest_daemon.curation.capture import Neighbour, judge
    mine = np.asarray(embed([c["content"] for c in candidates]), dtype=np.float32)
    theirs = np.asarray(embed([e["content"] for e in existing]), dtype=np.float32)
    scores = mine @ theirs.T
    out = []
    for row, c in zip(scores, candidates):
        near = [Neighbour(int(i), existing[int(i)]["content"], float(row[i]))
                for i in np.argsort(-row)[:NEIGHBOURS]]
        out.append(judge(c["content"], near))
    return out


def figures(rows: list[tuple[dict, object]]) -> dict:
    junk = [(c, v) for c, v in rows if c["label"] == "junk"]
    good = [(c, v) for c, v in rows if c["label"] == "keep"]
    kept = [(c, v) for c, v in junk if v.keep]
    lost = [(c, v) for c, v in good if not v.keep]
    return {"junk": len(junk), "good": len(good), "junk_kept": kept, "good_lost": lost,
            "junk_kept_pct": 100 * len(kept) / max(1, len(junk)),
            "good_lost_pct": 100 * len(lost) / max(1, len(good))}


def embedder():
    from memnest_daemon.model.embedder import Embedder
    from memnest_proto.contract import OFFLINE_MODEL
    model = Embedder(OFFLINE_MODEL)
    return model.embed


def _show(c: dict, v) -> str:
    text = c["content"].replace("\n", "⏎ ")
    return f"    [{c['kind']} → {v.kind}] {text[:150]}"


def locomo_refusals() -> tuple[int, int, list[str]]:
    sys.path.insert(0, str(ROOT / "bench"))
    from locomo import LOCOMO_DIR, load_conversations, memory_items
    from memnest_daemon.curation.capture import judge
    total, refused = 0, []
    for path in sorted(Path(LOCOMO_DIR).glob("conv-*.json")):
        for conv in load_conversations(path):
            for _, items in memory_items(conv):
                for item in items:
                    total += 1
                    verdict = judge(item["content"])
                    if not verdict.keep:
                        refused.append(f"    [{verdict.kind}] {item['content'][:150]}")
    return total, len(refused), refused


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--locomo", action="store_true", help="also judge the LOCOMO turns")
    args = ap.parse_args()
    candidates, existing = load("candidates.jsonl"), load("existing.jsonl")
    embed = embedder()
    started = time.perf_counter()
    judged = verdicts(candidates, existing, embed)
    seconds = time.perf_counter() - started
    rows = list(zip(candidates, judged))
    print(f"{len(candidates)} candidates ({Counter(c['label'] for c in candidates)}), "
          f"{len(existing)} existing memories; judged with embeddings in {seconds:.2f} s")
    for name, part in (("tune", [r for r in rows if r[0]["split"] == "tune"]),
                       ("held_out", [r for r in rows if r[0]["split"] == "held_out"]),
                       ("all", rows)):
        f = figures(part)
        print(f"\n{name}: junk kept {len(f['junk_kept'])}/{f['junk']} = "
              f"{f['junk_kept_pct']:.1f}%   good lost {len(f['good_lost'])}/{f['good']} = "
              f"{f['good_lost_pct']:.1f}%")
        if name == "all":
            continue
        for c, v in f["junk_kept"]:
            print("  junk kept" + _show(c, v)[2:])
        for c, v in f["good_lost"]:
            print("  good lost" + _show(c, v)[2:])
    by_kind = Counter((c["kind"], v.keep == (c["label"] == "keep")) for c, v in rows)
    print("\nright by kind: " + ", ".join(
        f"{k} {by_kind[(k, True)]}/{by_kind[(k, True)] + by_kind[(k, False)]}"
        for k in sorted({c["kind"] for c in candidates})))
    from memnest_daemon.curation.capture import judge
    started = time.perf_counter()
    for c in candidates:
        judge(c["content"])
    print(f"judge alone: {1000 * (time.perf_counter() - started) / len(candidates):.3f} ms "
          "per candidate")
    if args.locomo:
        total, n, refused = locomo_refusals()
        print(f"\nLOCOMO turns refused: {n} of {total}")
        print("\n".join(refused[:40]))


if __name__ == "__main__":
    main()
