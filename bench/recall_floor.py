"""Recall hook: which relevance floor on `memory_search` scores to inject memories above?

The prompt hook calls `memory_search` with the user's prompt as `query` (default fusion mode,
`top_k` 5, `preview_chars` 300) and injects only the results whose `score` is at or above a
floor. This bench measures, on LOCOMO, what each floor would inject:

1. Build the LOCOMO memories exactly as bench/locomo.py does (its private daemon with the
   offline MiniLM model, one memory per dialogue turn, one fresh workspace per conversation;
   the functions are imported from it). Conversations: every file in bench/locomo.py's
   LOCOMO_DIR (../shared/locomo, or MEMNEST_LOCOMO_DIR), conv-26 and conv-30 first;
   `--conversations N` keeps the first N, `--quick` the first 2.
2. Treat every LOCOMO question with gold evidence as a prompt: one `memory_search` call per
   question, as the hook makes it (query = question, top_k 5, preview_chars 300, no fusion
   argument). Kept per result: its score, whether it is a gold evidence turn, and the tokens
   it would cost (chars / 4 of the line `- [#id, category] <preview>`). A top_k 3 hook sees
   the first three of these five: the ranking does not depend on top_k (the candidate pool
   is MEMORY_SEARCH_CANDIDATES, 100) and the access counts a search records do not rank.
3. Unrelated prompts: each conversation's questions are also asked in the NEXT conversation's
   workspace (other people, other events; the same kind of chat), where nothing is gold. For
   those, the share of prompts with something injected is the floor's false-alarm rate.
   Needs at least two conversations.

Printed: the score quantiles of gold, non-gold, each question's top result, and unrelated
results; then for a grid of floors spanning the questions' result scores, at top_k 5 and at
top_k 3: hit rate (share of questions with >= 1 gold memory injected), share of questions with
nothing injected, mean memories injected, mean tokens injected per prompt, precision (gold
among all memories injected, pooled); for unrelated prompts the share with something injected
and their mean tokens; and J = hit rate - that share. Then the recommended floor, by the rule
printed with it (RULE below: the lowest floor within one standard error of the best J), its
figures at top_k 5 and 3, and its hit rate by question category.

Read with care: gold evidence is a lower bound on relevance (a neighbouring turn of the same
exchange is often useful too), so precision here is pessimistic. And the scores are those of
the default fusion mode on freshly stored turns of a conversation: every memory gets the full
recency part (0.05) and a share of its neighbours' scores (memories stored within an hour of
each other), so the floor belongs to this mode and this model, and memories stored alone
score lower than these.

No LLM, nothing random: two full runs gave the same table (tokens within 0.1). Asserts nothing.

Run:  .venv/bin/python bench/recall_floor.py              all conversations (4: ~1 min)
      .venv/bin/python bench/recall_floor.py --quick      conv-26 and conv-30 (~30 s)
      .venv/bin/python bench/recall_floor.py --conversations 3 --save /tmp/rf.json
      .venv/bin/python bench/recall_floor.py --load /tmp/rf.json    re-print without a daemon
Time on a shared 2-core machine: all four conversations 57-91 s (mostly ingest: 2,089
memories; 1,440 searches 13-20 s), --quick 26 s; --load re-prints in a second or two.
"""
import argparse
import json
import math
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from locomo import (
    CATEGORIES,
    DEFAULT_FILES,
    LOCOMO_DIR,
    OFFLINE_MODEL,
    PrivateDaemon,
    _interrupt,
    ingest,
    load_conversations,
    percentile,
    workspace_for,
)
from memnest_daemon.search.ranking import DEFAULT_FUSION

TOP_K = 5            # what the hook asks for
TOP_KS = (5, 3)      # the tables: the hook at top_k 5, and a top_k 3 variant
PREVIEW_CHARS = 300
QUANTILES = (0, 5, 10, 25, 50, 75, 90, 95, 100)
GRID_POINTS = 15
# The recommendation. A floor trades two errors: evidence kept from the agent (a LOCOMO
# question whose gold turns are all below the floor) and memories pushed on a prompt they do not
# concern (an unrelated prompt with anything above it). J = hit rate - share of unrelated
# prompts with something injected (Youden's J: the two errors weigh the same) at top_k 5; its
# maximum is a plateau, and floors on it within one standard error of the maximum cannot be told
# apart on this data, so the rule takes the lowest of them: the most evidence at no measurable
# cost in false alarms. Searched on a 0.01 grid. With one conversation there are no unrelated
# prompts: then the fallback keeps FALLBACK_KEEP of the no-floor hit rate.
RULE = ("the lowest floor (0.01 steps) whose J = hit rate - unrelated-prompt injection rate "
        f"(top_k {TOP_K}) is within one standard error of the best J")
FALLBACK_KEEP = 0.90
FALLBACK_RULE = (f"the highest floor (0.01 steps) keeping {FALLBACK_KEEP:.0%} of the no-floor "
                 f"top_k {TOP_K} hit rate (no unrelated prompts: one conversation)")


# -- collecting ------------------------------------------------------------------------------

def conversation_files(n: int | None) -> list[Path]:
    found = sorted(LOCOMO_DIR.glob("*.json"))
    first = [LOCOMO_DIR / f for f in DEFAULT_FILES if LOCOMO_DIR / f in found]
    files = first + [p for p in found if p not in first]
    return files if n is None else files[:n]


def line_tokens(result: dict) -> float:
    """What one injected memory costs: chars / 4 of its line (the content is already cut to
    preview_chars, with "…" when truncated)."""
    content = " ".join(str(result.get("content", "")).split())
    return len(f"- [#{result['id']}, {result.get('category', 'general')}] {content}") / 4


def search(daemon: PrivateDaemon, workspace: Path, question: str, id_to_dia: dict,
           gold: set[str]) -> list[list]:
    """The hook's call; per result [score, is_gold, tokens], best first. With --direct the
    score the floor is compared with leaves out the `context` channel (the lift a memory
    gets from the memories stored next to it), as the hook does."""
    found = daemon.call("memory_search", {"query": question, "top_k": TOP_K,
                                          "preview_chars": PREVIEW_CHARS,
                                          "explain": DIRECT}, workspace)
    return [[_score(r), bool(gold & set(id_to_dia.get(r["id"], []))), line_tokens(r)]
            for r in found["results"]]


DIRECT = False  # set by --direct


def _score(result: dict) -> float:
    if not DIRECT:
        return result["score"]
    return result["score"] - result.get("explain", {}).get("context", 0.0)


def collect(n_conversations: int | None) -> dict:
    files = conversation_files(n_conversations)
    convs = [conv for path in files for conv in load_conversations(path)]
    root = Path(tempfile.mkdtemp(prefix="memnest-recall-floor-ws-"))
    daemon = PrivateDaemon()
    data: dict = {"model": OFFLINE_MODEL, "conversations": [], "questions": [],
                  "unrelated": []}
    timings: dict[str, float] = {}
    try:
        started = time.perf_counter()
        daemon.start()
        timings["start"] = time.perf_counter() - started
        data["fusion"] = (daemon.env.get("MEMORY_FUSION") or "").strip().lower() \
            or DEFAULT_FUSION
        print(f"memnest recall-floor bench: model {OFFLINE_MODEL}, fusion {data['fusion']} "
              f"(default), top_k {TOP_K}, preview_chars {PREVIEW_CHARS}, "
              f"{len(convs)} conversation(s): {', '.join(c['name'] for c in convs)}", flush=True)
        stores = []
        for path, conv in zip(files, convs):
            ws = workspace_for(root, path, conv)
            id_to_dia, seconds, _ = ingest(daemon, conv, ws)
            timings["ingest"] = timings.get("ingest", 0.0) + seconds
            stores.append((ws, id_to_dia))
            data["conversations"].append({"name": conv["name"], "memories": len(id_to_dia),
                                          "questions": len(conv["questions"])})
            print(f"  {conv['name']}: {len(id_to_dia)} memories in {seconds:.1f}s, "
                  f"{len(conv['questions'])} questions with evidence", flush=True)
        started = time.perf_counter()
        for i, conv in enumerate(convs):
            ws, id_to_dia = stores[i]
            for question, category, gold in conv["questions"]:
                data["questions"].append({
                    "conversation": conv["name"], "category": category, "question": question,
                    "results": search(daemon, ws, question, id_to_dia, gold)})
        timings["search"] = time.perf_counter() - started
        if len(convs) > 1:
            started = time.perf_counter()
            for i, conv in enumerate(convs):
                ws, id_to_dia = stores[(i + 1) % len(convs)]
                for question, category, _ in conv["questions"]:
                    data["unrelated"].append({
                        "conversation": conv["name"], "asked_in": convs[(i + 1) % len(convs)]
                        ["name"], "category": category, "question": question,
                        "results": search(daemon, ws, question, {}, set())})
            timings["unrelated"] = time.perf_counter() - started
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
    data["timings"] = timings
    return data


# -- measuring -------------------------------------------------------------------------------

def at_floor(rows: list[dict], floor: float, k: int) -> dict:
    """What the hook injects over `rows` (questions) at this floor and top_k."""
    hits = empty = injected = gold = 0
    tokens = 0.0
    for row in rows:
        picked = [r for r in row["results"][:k] if r[0] >= floor]
        n_gold = sum(1 for r in picked if r[1])
        hits += n_gold > 0
        empty += not picked
        injected += len(picked)
        gold += n_gold
        tokens += sum(r[2] for r in picked)
    n = len(rows) or 1
    return {"hit": hits / n, "empty": empty / n, "mean_n": injected / n,
            "tokens": tokens / n, "precision": gold / injected if injected else float("nan")}


def nice_step(span: float, points: int) -> float:
    """The largest 1, 2, 2.5 or 5 x 10^n step giving at least `points` floors over `span`."""
    raw = span / max(points - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    return max(m * magnitude for m in (1, 2, 2.5, 5) if m * magnitude <= raw)


def floor_grid(scores: list[float]) -> list[float]:
    """At least GRID_POINTS round floors spanning the scores of the questions' results (2nd
    percentile to the highest: below that every result passes)."""
    lo, hi = percentile(scores, 2), max(scores)
    step = nice_step(hi - lo, GRID_POINTS)
    start = math.floor(lo / step) * step
    count = int(math.ceil((hi - start) / step - 1e-9)) + 1
    return [round(start + i * step, 6) for i in range(count)]


def j_stat(data: dict, floor: float, k: int = TOP_K) -> tuple[float, float]:
    """J = hit rate - unrelated injection rate, and its standard error (the two shares
    treated as independent)."""
    h = at_floor(data["questions"], floor, k)["hit"]
    a = 1 - at_floor(data["unrelated"], floor, k)["empty"]
    se = math.sqrt(h * (1 - h) / len(data["questions"]) + a * (1 - a) / len(data["unrelated"]))
    return h - a, se


def recommend(data: dict) -> tuple[float, str, list[str]]:
    """(floor, rule, the figures behind it)."""
    questions = data["questions"]
    top = max(r[0] for q in questions + data["unrelated"] for r in q["results"])
    grid = [step / 100 for step in range(0, int(math.ceil(top * 100)) + 2)]
    base = at_floor(questions, -math.inf, TOP_K)["hit"]
    keep = max(f for f in grid if at_floor(questions, f, TOP_K)["hit"] >= FALLBACK_KEEP * base)
    if not data["unrelated"]:
        return keep, FALLBACK_RULE, [f"no-floor top_k {TOP_K} hit rate {base:.3f}"]
    js = {f: j_stat(data, f) for f in grid}
    best = max(grid, key=lambda f: js[f][0])
    bar = js[best][0] - js[best][1]
    chosen = min(f for f in grid if js[f][0] >= bar)
    return chosen, RULE, [
        f"best J {js[best][0]:.3f} at {best:.2f} (standard error {js[best][1]:.3f}); "
        f"plateau: J >= {bar:.3f} from {chosen:.2f} to "
        f"{max(f for f in grid if js[f][0] >= bar):.2f}; J at {chosen:.2f} = "
        f"{js[chosen][0]:.3f}",
        f"for comparison: keeping {FALLBACK_KEEP:.0%} of the no-floor hit rate ({base:.3f}) "
        f"allows up to {keep:.2f} (J {js[keep][0]:.3f}); no floor: J {js[0.0][0]:.3f}"]


# -- output ----------------------------------------------------------------------------------

def print_quantiles(data: dict) -> None:
    groups = {
        "gold results": [r[0] for q in data["questions"] for r in q["results"] if r[1]],
        "non-gold results": [r[0] for q in data["questions"] for r in q["results"]
                             if not r[1]],
        "top result per question": [q["results"][0][0] for q in data["questions"]
                                    if q["results"]],
        "best gold per question": [next(r[0] for r in q["results"] if r[1])
                                   for q in data["questions"] if any(r[1] for r in q["results"])],
        "unrelated results": [r[0] for q in data["unrelated"] for r in q["results"]],
        "top unrelated per question": [q["results"][0][0] for q in data["unrelated"]
                                       if q["results"]],
    }
    print(f"\nscore quantiles (top_k {TOP_K} results)")
    print(f"  {'':<27} {'n':>5} " + " ".join(f"{'p' + str(p):>6}" for p in QUANTILES))
    for label, scores in groups.items():
        if scores:
            print(f"  {label:<27} {len(scores):>5} "
                  + " ".join(f"{percentile(scores, p):>6.3f}" for p in QUANTILES))


def print_table(data: dict, floors: list[float], k: int) -> None:
    unrelated = data["unrelated"]
    print(f"\ntop_k {k}: {len(data['questions'])} questions"
          + (f", {len(unrelated)} unrelated prompts" if unrelated else ""))
    head = (f"  {'floor':>6} | {'hit':>5} | {'none':>5} | {'mean n':>6} | {'tokens':>6} | "
            f"{'prec':>5}")
    if unrelated:
        head += f" || {'unrel. any':>10} | {'unrel. tok':>10} || {'J':>6}"
    print(head)
    for floor in [-math.inf] + floors:
        m = at_floor(data["questions"], floor, k)
        label = "none" if floor == -math.inf else f"{floor:.3f}"
        line = (f"  {label:>6} | {m['hit']:>5.3f} | {m['empty']:>5.3f} | {m['mean_n']:>6.2f} | "
                f"{m['tokens']:>6.1f} | {m['precision']:>5.3f}")
        if unrelated:
            u = at_floor(unrelated, floor, k)
            line += (f" || {1 - u['empty']:>10.3f} | {u['tokens']:>10.1f} || "
                     f"{m['hit'] - (1 - u['empty']):>6.3f}")
        print(line)


def print_recommendation(data: dict) -> None:
    floor, rule, figures = recommend(data)
    print(f"\nrecommended floor: {floor:.2f}")
    print(f"  rule: {rule}")
    for line in figures:
        print(f"  {line}")
    for k in TOP_KS:
        m = at_floor(data["questions"], floor, k)
        line = (f"  top_k {k} at {floor:.2f}: hit rate {m['hit']:.3f}, nothing injected "
                f"{m['empty']:.3f}, mean {m['mean_n']:.2f} memories / {m['tokens']:.1f} tokens "
                f"per prompt, precision {m['precision']:.3f}")
        if data["unrelated"]:
            u = at_floor(data["unrelated"], floor, k)
            line += (f"; unrelated prompts: something injected {1 - u['empty']:.3f}, "
                     f"{u['tokens']:.1f} tokens")
        print(line)
    print(f"  top_k {TOP_K} hit rate by category at {floor:.2f} (no floor -> floor):")
    for cat in sorted({q["category"] for q in data["questions"]}):
        rows = [q for q in data["questions"] if q["category"] == cat]
        print(f"    {CATEGORIES.get(cat, f'cat-{cat}'):<12} n {len(rows):>4}  "
              f"{at_floor(rows, -math.inf, TOP_K)['hit']:.3f} -> "
              f"{at_floor(rows, floor, TOP_K)['hit']:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--conversations", type=int, default=None, metavar="N",
                        help="use the first N conversations (default: all)")
    parser.add_argument("--quick", action="store_true", help="the first 2 conversations")
    parser.add_argument("--direct", action="store_true",
                        help="compare the floor with the score less its context channel")
    parser.add_argument("--floors", default="",
                        help="comma-separated floors instead of the automatic grid")
    parser.add_argument("--save", type=Path, help="write the collected results here (JSON)")
    parser.add_argument("--load", type=Path,
                        help="analyse results saved with --save instead of running the daemon")
    args = parser.parse_args()
    global DIRECT
    DIRECT = args.direct

    started = time.perf_counter()
    if args.load:
        data = json.loads(args.load.read_text())
    else:
        signal.signal(signal.SIGTERM, _interrupt)
        try:
            data = collect(2 if args.quick else args.conversations)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        if args.save:
            args.save.write_text(json.dumps(data))
    if not data["questions"]:
        print("no questions with evidence")
        return 1

    print_quantiles(data)
    scores = [r[0] for q in data["questions"] for r in q["results"]]
    floors = ([float(f) for f in args.floors.split(",") if f.strip()] if args.floors
              else floor_grid(scores))
    for k in TOP_KS:
        print_table(data, floors, k)
    print_recommendation(data)
    t = data.get("timings", {})
    if t and not args.load:
        print("\ntime: daemon start {:.1f}s, ingest {:.1f}s, search {:.1f}s ({} questions), "
              "unrelated {:.1f}s; total {:.0f}s".format(
                  t.get("start", 0), t.get("ingest", 0), t.get("search", 0),
                  len(data["questions"]), t.get("unrelated", 0),
                  time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
