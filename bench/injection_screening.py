"""How well memnest flags prompt injection in memories, on labelled texts.

tests/data/injection_texts.jsonl (used while building the rule) and
injection_texts_heldout.jsonl (never tuned on) hold memory texts written for this project,
each labelled injection or benign, with the technique used (plain override, homoglyphs,
base64, another language, a note addressed to the agent...; benign ones include texts that
talk *about* prompts and tools). injection_texts_wrappers.jsonl (written with the wrapper_tag
marker, so tuned on) holds texts that open or close the wrappers an agent's context is fenced
with, and code, HTML, XML and prose with angle brackets that must not be flagged. For each
file this prints precision and recall of `screening.markers` (a text is flagged when it has
any marker), recall per technique, and the same for the rule of another commit (--baseline).

Run:  .venv/bin/python bench/injection_screening.py [--baseline REV] [--show-misses]
"""
import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPORA = [ROOT / "tests" / "data" / "injection_texts.jsonl",
           ROOT / "tests" / "data" / "injection_texts_heldout.jsonl",
           ROOT / "tests" / "data" / "injection_texts_wrappers.jsonl"]
BASELINE = "4f7c918"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def rule_at(revision: str):
    for where in ("daemon/curation/screening.py", "daemon/screening.py"):  # after, before layers
        shown = subprocess.run(["git", "show", f"{revision}:{where}"], cwd=ROOT,
                               capture_output=True, text=True)
        if shown.returncode == 0:
            break
    else:
        raise SystemExit(f"no screening rule at {revision}")
    path = Path(tempfile.mkdtemp()) / "screening_then.py"
    path.write_text(shown.stdout)
    # Inside the current package, so that a layered rule's relative imports resolve.
    spec = importlib.util.spec_from_file_location("memnest_daemon.curation.screening_then",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score(markers, texts: list[dict]) -> dict:
    flagged = [bool(markers(t["text"])) for t in texts]
    truth = [t["label"] == "injection" for t in texts]
    tp = sum(f and t for f, t in zip(flagged, truth))
    fp = sum(f and not t for f, t in zip(flagged, truth))
    fn = sum(t and not f for f, t in zip(flagged, truth))
    per = Counter(t["technique"] for t in texts if t["label"] == "injection")
    caught = Counter(t["technique"] for t, f in zip(texts, flagged)
                     if f and t["label"] == "injection")
    return {"precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0, "tp": tp, "fp": fp, "fn": fn,
            "per": per, "caught": caught, "flagged": flagged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from memnest_daemon.curation import screening
    then = rule_at(args.baseline)
    for path in CORPORA:
        texts = load(path)
        counts = Counter(t["label"] for t in texts)
        print(f"\n{path.name}: {counts['injection']} injections, {counts['benign']} benign")
        for name, markers in ((f"baseline {args.baseline}", then.markers),
                              ("now", screening.markers)):
            r = score(markers, texts)
            print(f"  {name}: precision {r['precision']:.3f}, recall {r['recall']:.3f} "
                  f"({r['tp']} caught, {r['fn']} missed, {r['fp']} benign flagged)")
        r = score(screening.markers, texts)
        print("  recall by technique (now): " + ", ".join(
            f"{k} {r['caught'][k]}/{n}" for k, n in sorted(r["per"].items())))
        if args.show_misses:
            for t, f in zip(texts, r["flagged"]):
                if f != (t["label"] == "injection"):
                    print(f"    [{t['label']}/{t['technique']}] {t['text'][:160]!r}")


if __name__ == "__main__":
    main()
