"""How well `privacy.clean` redacts secrets, on a labelled corpus of engineering notes.

tests/data/secrets/positives.jsonl holds notes with secrets in them (AWS, Anthropic, OpenAI,
GitHub, GitLab, Slack, Stripe and Google keys, JWTs, private keys, connection strings, .env
lines...), each with the substrings that must disappear; lookalikes.jsonl holds notes with
things that look like secrets and are not (commit ids, digests, integrity hashes,
placeholders, prose and code about tokens), which must come back unchanged. The *_heldout
files were written after the rules were tuned on the first two and are never tuned on. All
are written by bench/make_secret_corpus.py from fixed seeds.

For each kind this prints the recall (positives whose secrets all disappeared: no 12
characters of one in a row are left) and the false
positives (look-alikes changed at all), the totals, and the failing notes, for the rule now
and for the rule of another commit (--baseline); for the tuned set, then the held-out one.

Run:  .venv/bin/python bench/secret_detection.py [--baseline REV] [--width N]
"""
import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "secrets"
BASELINE = "273dc38"  # privacy.py before the corpus existed

Clean = Callable[[str], Any]


def load(name: str) -> list[dict]:
    path = CORPUS / f"{name}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def clean_at(revision: str) -> Clean:
    source = subprocess.run(["git", "show", f"{revision}:daemon/curation/privacy.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp()) / "privacy_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("privacy_then", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.clean  # type: ignore[no-any-return]


WINDOW = 12  # a secret leaks when this many of its characters in a row survive


def leaks(secret: str, text: str) -> bool:
    """Whether any WINDOW characters of `secret` in a row (all of it, if shorter) are in
    `text`: a key redacted only in part leaks too."""
    width = min(len(secret), WINDOW)
    return any(secret[i:i + width] in text for i in range(len(secret) - width + 1))


def leaked(clean: Clean, note: dict) -> list[str]:
    """The secrets of a positive note that leak from its cleaned text."""
    text = clean(note["text"]).text
    return [s for s in note["secrets"] if leaks(s, text)]


def changed(clean: Clean, note: dict) -> bool:
    return bool(clean(note["text"]).text != note["text"])


def score(clean: Clean, positives: list[dict], lookalikes: list[dict]) -> dict:
    missed: dict[str, list[tuple[dict, list[str]]]] = defaultdict(list)
    flagged: dict[str, list[tuple[dict, str]]] = defaultdict(list)
    start = time.perf_counter()
    for note in positives:
        if left := leaked(clean, note):
            missed[note["kind"]].append((note, left))
    for note in lookalikes:
        if changed(clean, note):
            flagged[note["kind"]].append((note, clean(note["text"]).text))
    took = time.perf_counter() - start
    return {"missed": missed, "flagged": flagged, "seconds": took}


def counts(notes: list[dict]) -> dict[str, int]:
    by_kind: dict[str, int] = defaultdict(int)
    for note in notes:
        by_kind[note["kind"]] += 1
    return by_kind


def short(text: str, width: int) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= width else text[:width - 1] + "…"


def report(name: str, result: dict, positives: list[dict], lookalikes: list[dict]) -> None:
    pos, look = counts(positives), counts(lookalikes)
    missed = sum(len(v) for v in result["missed"].values())
    flagged = sum(len(v) for v in result["flagged"].values())
    print(f"\n{name}: recall {1 - missed / len(positives):.3f} ({missed} of {len(positives)} "
          f"leak), false positives {flagged / len(lookalikes):.3f} ({flagged} of "
          f"{len(lookalikes)} changed), {result['seconds'] * 1000:.0f} ms")
    print("  recall by kind:  " + ", ".join(
        f"{k} {1 - len(result['missed'][k]) / n:.2f}" for k, n in sorted(pos.items())))
    print("  changed by kind: " + ", ".join(
        f"{k} {len(result['flagged'][k])}/{n}" for k, n in sorted(look.items())))


def failures(result: dict, width: int) -> None:
    for kind, notes in sorted(result["missed"].items()):
        for note, left in notes:
            print(f"  leaked [{kind}] {short(left[0], 40)!r} in {short(note['text'], width)!r}")
    for kind, flagged in sorted(result["flagged"].items()):
        for note, text in flagged:
            print(f"  changed [{kind}] {short(note['text'], width)!r}\n"
                  f"       -> {short(text, width)!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE, help="a commit, or 'none'")
    parser.add_argument("--width", type=int, default=160, help="failing notes cut to this")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from memnest_daemon.curation import privacy
    then = clean_at(args.baseline) if args.baseline != "none" else None
    for suffix, title in (("", "tuned on"), ("_heldout", "held out")):
        positives, lookalikes = load("positives" + suffix), load("lookalikes" + suffix)
        print(f"\n== {title}: {len(positives)} notes with secrets ({len(counts(positives))} "
              f"kinds), {len(lookalikes)} look-alikes ({len(counts(lookalikes))} kinds)")
        if then is not None:
            report(f"baseline {args.baseline}", score(then, positives, lookalikes),
                   positives, lookalikes)
        now = score(privacy.clean, positives, lookalikes)
        report("now", now, positives, lookalikes)
        failures(now, args.width)


if __name__ == "__main__":
    main()
