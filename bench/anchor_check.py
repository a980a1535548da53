"""What checking a memory's code anchors adds to recall (issue 21): memory_search, memory_get
and memory_stale in a workspace whose memories all cite code, against the same memories
without anchors. Prints figures; asserts nothing, but reports anchor states that differ from
what the edits should give.

Against a private memnestd on a temp socket with the offline model (bench/core.py's Env).
Two local clones of this repository (`git clone` of HEAD: tracked files only; /work/main or
wherever this script lives is never touched) are the two workspaces:

  anchored   N developer notes (default 1,000), each citing 1-3 real files of the clone
             (whole files, line ranges that exist, functions found by scanning the .py files
             for `def name(`), given as `anchors` and written in the text the same way
  control    the same N texts, stored with auto_anchor=false and no anchors (the git branch
             and commit are still recorded): the only difference is the anchors

Measured (client wall time of DaemonClient.call_tool over gRPC, the daemon has no per-call
timing to report; anchored and control calls alternate query by query so that background
noise hits both alike):

  search         memory_search top_k 10 over Q queries (default 50) x R rounds (default 5),
                 round 1 a warm-up left out: median and p90 per workspace, and the median
                 of the per-query difference (anchored - control)
  idle           a search after 31 s without calls (--idle, default 3 in each workspace):
                 code/git.py looks the repository up again after FULL_TTL (30 s), and an
                 agent's searches are usually further apart than that; the lookup alone
                 (three git processes) is timed in this process too
  stale          memory_stale (checks every anchored memory), median of 5
  get            memory_get of 10 ids (anchored ids in the anchored workspace), median of 20
  in process     the daemon's own freshness() on 20 memories (a page of 10 + the 10 beyond
                 it that rank_by_code checks), in this process: the check alone, no gRPC
  after edits    six of the most cited files are edited in the anchored clone and
                 committed: two get a line of code appended (a whole-file anchor is
                 changed), two get a comment on a cited line and one appended (whole-file
                 anchors stay fresh, the cited lines do not), two get a comment inserted at
                 the top (cited lines move).
                 Then the search rounds again: the first round after the edit (each query's
                 first search since; the daemon hashes the edited files and re-anchors the
                 moved code) apart from the rounds after it; memory_stale again; every
                 memory's states (memory_get of all ids) against the states the edits should
                 give.

Run:  .venv/bin/python bench/anchor_check.py [--n 1000] [--queries 50] [--rounds 5] [--keep]
      (~2.5 min on 2 cores: the two ingests ~35 s, the idle searches ~95 s)
"""
import argparse
import json
import random
import re
import subprocess
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import (  # noqa: E402
    CONDITIONS,
    FIXES,
    PEOPLE,
    PROBLEMS,
    REASONS,
    Env,
    cleaned_up,
    note,
)

REPO = Path(__file__).resolve().parents[1]
TOP_K = 10
BATCH = 500
EXTS = (".py", ".md", ".proto", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".sh")
DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")
GIT_ID = ("-c", "user.name=memnest bench", "-c", "user.email=bench@memnest.invalid",
          "-c", "commit.gpgsign=false")


# -- the workspaces ----------------------------------------------------------------------------

def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def clone(root: Path, name: str) -> Path:
    path = root / name
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(path)], check=True)
    return path.resolve()


class Citable:
    """The clone's text files and their functions: what notes can cite."""

    def __init__(self, workspace: Path):
        self.lines: dict[str, list[str]] = {}
        self.defs: dict[str, list[str]] = {}
        for rel in git(workspace, "ls-files").splitlines():
            if not rel.endswith(EXTS):
                continue
            data = (workspace / rel).read_bytes()
            if not data.strip() or b"\x00" in data[:8192] or len(data) > 1 << 20:
                continue
            lines = data.decode("utf-8", errors="replace").split("\n")
            if lines[-1] == "":
                lines.pop()
            self.lines[rel] = lines
            if rel.endswith(".py"):
                names = Counter(m.group(1) for m in map(DEF.match, lines) if m)
                # defined once in the file and not a dunder: the citation is unambiguous
                self.defs[rel] = sorted(n for n, c in names.items()
                                        if c == 1 and not n.startswith("__"))
        self.paths = sorted(self.lines)
        self.py = sorted(p for p, names in self.defs.items() if names)


def cite(rng: random.Random, files: Citable, taken: set[str]) -> tuple[dict, str]:
    """One anchor (as memory_store takes it) and how the text cites it."""
    roll = rng.random()
    while True:
        if roll < 0.4:
            path = rng.choice(files.py)
            if path in taken:
                continue
            name = rng.choice(files.defs[path])
            return {"path": path, "symbol": name}, f"`{name}()` in {path}"
        path = rng.choice(files.paths)
        if path in taken:
            continue
        if roll < 0.75:
            count = len(files.lines[path])
            length = rng.randint(1, min(15, count))
            start = rng.randint(1, count - length + 1)
            end = start + length - 1
            lines = f"{start}-{end}" if end > start else str(start)
            return {"path": path, "lines": lines}, f"{path}:{lines}"
        return {"path": path}, f"`{path}`"


TEMPLATES = [
    "{person} found that {c1} {problem} when {condition}; the fix was to {fix}.",
    "Before touching {c1}, read it whole: it must change together with its tests {reason}.",
    "Decision: keep {c1} as it is {reason}; {person} reviewed the alternatives.",
    "Gotcha: {c1} {problem} if {condition}. Workaround: {fix}.",
    "{person} wants {c1} split in two, {reason}.",
    "When {condition}, look at {c1} first.",
    "Pattern: {c1} is the only place that should {fix}; do not duplicate it elsewhere.",
    "Learning: profiling showed {c1} costs {ms} ms per call once the workspace is large.",
    "Review note from {person}: {c1} needs a test for the case where {condition}.",
    "Bug #{num}: {c1} {problem} when {condition}; {person} is on it.",
]
QUERIES = [
    "what goes wrong when {condition}?",
    "why does {stem} {problem_base}?",
    "what did {person} decide about {stem}?",
    "where is {name} defined and what does it cost?",
    "what must change together with {stem}?",
    "which bug makes the code {problem_base}?",
    "how do we {fix}?",
    "what did profiling show about {name}?",
]


def corpus(n: int, files: Citable, seed: int = 21) -> list[dict]:
    rng, seen, out = random.Random(seed), set(), []
    while len(out) < n:
        taken: set[str] = set()
        anchors, cited = [], []
        for _ in range(rng.choice([1, 1, 2, 2, 3])):
            anchor, text = cite(rng, files, taken)
            taken.add(anchor["path"])
            anchors.append(anchor)
            cited.append(text)
        text = rng.choice(TEMPLATES).format(
            c1=cited[0], person=rng.choice(PEOPLE), problem=rng.choice(PROBLEMS),
            condition=rng.choice(CONDITIONS), fix=rng.choice(FIXES), reason=rng.choice(REASONS),
            ms=rng.randrange(2, 400), num=rng.randint(100, 9999))
        if len(cited) > 1:
            text += " Related: " + " and ".join(cited[1:]) + "."
        if text not in seen:
            seen.add(text)
            out.append({"content": text, "anchors": anchors})
    return out


def queries(n: int, files: Citable, items: list[dict], seed: int = 5) -> list[str]:
    rng, out = random.Random(seed), []
    while len(out) < n:
        anchor = rng.choice(rng.choice(items)["anchors"])
        stem = Path(anchor["path"]).stem.replace("_", " ")
        name = anchor.get("symbol") or stem
        q = rng.choice(QUERIES).format(
            condition=rng.choice(CONDITIONS), stem=stem, person=rng.choice(PEOPLE),
            problem_base=rng.choice(["time out", "deadlock", "leak file descriptors",
                                     "return stale data", "drop messages"]),
            name=name, fix=rng.choice(FIXES))
        if q not in out:
            out.append(q)
    return out


# -- measuring -----------------------------------------------------------------------------------

def ms_of(fn) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return (time.perf_counter() - started) * 1000, out


def med(values) -> float:
    return float(np.median(values))


def p90(values) -> float:
    return float(np.percentile(values, 90))


def store(env: Env, workspace: Path, items: list[dict], anchored: bool) -> tuple[list[int], float]:
    ids: list[int] = []
    started = time.perf_counter()
    for i in range(0, len(items), BATCH):
        chunk = items[i:i + BATCH]
        batch = [{"content": it["content"], "anchors": it["anchors"]} if anchored
                 else {"content": it["content"], "auto_anchor": False} for it in chunk]
        out = env.client().call_tool("memory_store", {"items": batch}, str(workspace))
        ids += [r["id"] for r in out["results"]]
        if out["stored"] != len(chunk):
            note(f"batch at {i}: {out['stored']} stored, {out['duplicates']} duplicates, "
                 f"{out['merged']} merged")
    return ids, time.perf_counter() - started


def search_rounds(env: Env, spaces: dict[str, Path], qs: list[str], rounds: int,
                  pages: dict | None = None) -> dict[str, list[list[float]]]:
    """rounds x queries wall times per workspace, anchored and control alternating (which
    goes first alternates too). `pages` collects the anchored pages' code states."""
    client = env.client()
    times = {name: [] for name in spaces}
    order = list(spaces)
    for r in range(rounds):
        row = {name: [] for name in spaces}
        for i, q in enumerate(qs):
            for name in (order if (i + r) % 2 == 0 else order[::-1]):
                ms, out = ms_of(lambda: client.call_tool(
                    "memory_search", {"query": q, "top_k": TOP_K}, str(spaces[name])))
                row[name].append(ms)
                if pages is not None and name == "anchored":
                    pages.setdefault(r, []).append(
                        [(res.get("code") or {}).get("state", "") for res in out["results"]])
        for name in spaces:
            times[name].append(row[name])
    return times


def summary(times: dict[str, list[list[float]]], rows: slice) -> dict:
    a = np.array(times["anchored"][rows]).ravel()
    c = np.array(times["control"][rows]).ravel()
    return {"n": len(a), "anchored_med": med(a), "anchored_p90": p90(a), "control_med": med(c),
            "control_p90": p90(c), "diff_med": med(a - c), "diff_p90": p90(a - c)}


# An idle gap like an agent's between searches: past code/git.py's FULL_TTL as it was when
# this bench was written; it is longer now (bench/RESULTS.md#code-anchors).
IDLE_S = 31.0


def idle_searches(env: Env, spaces: dict[str, Path], qs: list[str],
                  reps: int) -> dict[str, list[float]]:
    """A search after IDLE_S without any call, in each workspace (both memory sets record
    the branch and commit, so both pay whatever the idle gap costs the git lookup)."""
    client, out = env.client(), {name: [] for name in spaces}
    order = list(spaces)
    for r in range(reps):
        time.sleep(IDLE_S)
        for name in (order if r % 2 == 0 else order[::-1]):
            out[name].append(ms_of(lambda n=name: client.call_tool(
                "memory_search", {"query": qs[r], "top_k": TOP_K}, str(spaces[n])))[0])
    return out


def discover_ms(workspace: Path, reps: int = 10) -> list[float]:
    """code/git.py's repository lookup (three git processes), in this process."""
    from memnest_daemon.code.git import _discover

    return timed(lambda: _discover(str(workspace)), reps)


def timed(fn, reps: int) -> list[float]:
    fn()  # warm-up, untimed
    return [ms_of(fn)[0] for _ in range(reps)]


# -- in process: the daemon's own check, no gRPC -----------------------------------------------

def captured(workspace: Path, items: list[dict]) -> list:
    """The anchored memories as Memory records, their code context captured as memory_store
    captures it (curation/freshness.py written_context), for the daemon's check in process."""
    from memnest_daemon.core.records import Memory
    from memnest_daemon.curation.freshness import written_context

    now = datetime.now(timezone.utc)
    return [Memory(i, it["content"], "", "general", [], 3, 0, str(workspace), now, now,
                   code=written_context(str(workspace), it["content"], it["anchors"]).to_json())
            for i, it in enumerate(items)]


def in_process(memories: list, reps: int) -> dict:
    """freshness() (what rank_by_code calls) on pages of 20 memories (a page of 10 and the 10
    beyond it), in this process: the check alone."""
    from memnest_daemon.curation.freshness import freshness

    pages = [memories[k:k + 20] for k in range(0, len(memories), 20)]
    freshness(pages[0])  # warm: Repo.of, the parse cache
    per_page = []
    for _ in range(reps):
        for page in pages:
            per_page.append(ms_of(lambda p=page: freshness(p))[0])
    anchors = sum(len(json.loads(m.code)["anchors"]) for m in memories)
    return {"page_med": med(per_page), "page_p90": p90(per_page), "page_max": max(per_page),
            "pages": len(per_page), "anchors_per_page": anchors / len(memories) * 20}


def states_in_process(memories: list, expected: dict) -> tuple[Counter, list]:
    """Each anchor's state by the daemon's check (in this process, nothing re-anchored), and
    those that differ from what the edits should give."""
    from memnest_daemon.curation.freshness import freshness

    found = freshness(memories)
    states, wrong = Counter(), []
    for m in memories:
        for c in found[m.id].checks:
            states[c.state] += 1
            want = expected.get((m.id, c.anchor.path), "fresh")
            if c.state != want:
                wrong.append({"memory": m.id, "cites": c.anchor.where, "state": c.state,
                              "expected": want, "detail": c.detail})
    return states, wrong


# -- the edits ---------------------------------------------------------------------------------

def spans(workspace: Path, items: list[dict]) -> list[tuple[int, str, int, int, str]]:
    """(memory index, path, first line, last line, kind) of every anchor, as captured (a
    symbol's span is its definition's, as the daemon finds it)."""
    from memnest_daemon.code.anchors import capture

    out = []
    for i, it in enumerate(items):
        for a in it["anchors"]:
            if "symbol" in a:
                got = capture(str(workspace), a["path"], symbol=a["symbol"])
                out.append((i, a["path"], got.start, got.end, "symbol"))
            elif "lines" in a:
                first, _, last = a["lines"].partition("-")
                out.append((i, a["path"], int(first), int(last or first), "lines"))
            else:
                out.append((i, a["path"], 0, 0, "file"))
    return out


def edit(workspace: Path, items: list[dict]) -> tuple[dict[str, str], dict[tuple[int, str], str]]:
    """Edit six of the most cited files and commit. Returns {path: what was done} and the
    state each anchor of an edited file should now have, by (memory index, path)."""
    cited = spans(workspace, items)
    by_file = Counter(path for _, path, *_ in cited)
    # most cited first; the line to change must be cited by a range or a symbol
    ranked = [p for p, _ in by_file.most_common()]
    chosen: dict[str, str] = {}
    changed_line: dict[str, int] = {}
    for path in ranked:
        if len(chosen) == 6:
            break
        precise = [(s, e) for _, p, s, e, kind in cited if p == path and kind != "file"]
        kinds = list(chosen.values())
        if kinds.count("append") < 2:
            chosen[path] = "append"
        elif kinds.count("change") < 2 and precise:
            chosen[path] = "change"
            changed_line[path] = precise[0][0]
        elif kinds.count("insert at top") < 2 and any(k == "lines" for *_, k in
                                                       [c for c in cited if c[1] == path]):
            chosen[path] = "insert at top"
    from memnest_daemon.code.fingerprint import code_hash

    expected: dict[tuple[int, str], str] = {}
    code_changed: dict[str, bool] = {}
    for path, how in chosen.items():
        file = workspace / path
        text = file.read_text()
        if not text.endswith("\n"):
            text += "\n"
        lines = text.split("\n")
        if how == "change":
            k = changed_line[path] - 1
            lines[k] = lines[k] + "  # edited by bench"
        if how == "insert at top":
            lines.insert(0, "# inserted by bench")
        text = "\n".join(lines)
        if how == "append":
            text += "BENCH_APPENDED = 1\n"   # code: a whole-file anchor is changed
        if how == "change":
            text += "# appended by bench\n"  # a comment: a whole-file anchor stays fresh
        code_changed[path] = code_hash(_lines(file.read_text()), path) != \
            code_hash(_lines(text), path)
        file.write_text(text)
    for i, path, start, end, kind in cited:
        how = chosen.get(path)
        if how is None:
            continue
        state = "fresh"
        if kind == "file":
            state = "changed" if code_changed[path] else "fresh"
        elif how == "change" and start <= changed_line[path] <= end:
            state = "changed"
        elif how == "insert at top" and kind == "lines":
            state = "moved"
        expected[(i, path)] = state
    git(workspace, "commit", "-q", "-am", "bench: edit cited files")
    return chosen, expected


def _lines(text: str) -> list[str]:
    """A file's lines as the daemon reads them (files.read_source)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.rstrip() for line in lines]


# -- main ----------------------------------------------------------------------------------------

def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="memories per workspace")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5, help="search rounds, the first a "
                        "warm-up left out")
    parser.add_argument("--idle", type=int, default=3, help="searches after 31 s idle, "
                        "when the daemon looks the git repository up again (0: skip)")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    env = Env()
    figures: dict = {}
    with cleaned_up(env, args.keep) as outcome:
        run(env, args, figures)
    if outcome.interrupted:
        return 130
    if args.json:
        print(json.dumps(figures, indent=2, default=str))
    return 0


def run(env: Env, args, figures: dict) -> None:
    started = time.perf_counter()
    figures["load_start"] = psutil.getloadavg()[0]
    rev = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO,
                         capture_output=True, text=True).stdout.strip()
    anchored = clone(env.root, "anchored")
    control = clone(env.root, "control")
    cloned_at = time.time()
    files = Citable(anchored)
    items = corpus(args.n, files)
    qs = queries(args.queries, files, items)
    kinds = Counter(("symbol" if "symbol" in a else "lines" if "lines" in a else "file")
                    for it in items for a in it["anchors"])
    n_anchors = sum(kinds.values())
    n_cited = len({a["path"] for it in items for a in it["anchors"]})
    print(f"memnest anchor checks: code {rev}, {psutil.cpu_count()} CPUs, {args.n} memories "
          f"per workspace, {n_anchors} anchors ({kinds['file']} files, {kinds['lines']} line "
          f"ranges, {kinds['symbol']} symbols) over {n_cited} "
          f"of the clone's {len(files.paths)} text files; {len(qs)} queries x {args.rounds} "
          f"rounds", flush=True)
    note(f"e.g. {items[0]['content']!r}")
    note(f"query e.g. {qs[0]!r}")

    env.start_daemon()
    # Files written less than 2 s ago are hashed but their mtime is not trusted (RACY_NS):
    # wait that out, so the anchors are taken as they would be in a repository at rest.
    time.sleep(max(0.0, cloned_at + 2.5 - time.time()))
    spaces = {"anchored": anchored, "control": control}
    ids = {}
    for name, ws in spaces.items():
        ids[name], secs = store(env, ws, items, anchored=name == "anchored")
        note(f"stored {len(ids[name])} memories in {name} in {secs:.1f} s "
             f"({len(ids[name]) / secs:.0f}/s)")
    client = env.client()

    def call(name: str, tool: str, arguments: dict) -> dict:
        return client.call_tool(tool, arguments, str(spaces[name]))

    # The states of every memory before any edit: all should be fresh.
    before = all_states(call, ids["anchored"])
    note(f"before the edits: {dict(before['memories'])} memories, anchors "
         f"{dict(before['anchors'])}, anchors per memory {before['per_memory']:.2f} "
         f"(given {n_anchors / len(items):.2f})")
    figures["states_before"] = before

    print("[1/4] search, anchored and control alternating", flush=True)
    pages: dict = {}
    t = search_rounds(env, spaces, qs, args.rounds, pages)
    figures["search"] = summary(t, slice(1, None))
    states = Counter(s for page in pages.get(args.rounds - 1, []) for s in page)
    note(f"code states shown on the anchored pages: {dict(states)}")

    if args.idle:
        note(f"{args.idle} searches after {IDLE_S:.0f} s idle (code/git.py FULL_TTL)")
        figures["idle"] = idle_searches(env, spaces, qs, args.idle)

    print("[2/4] memory_stale, memory_get of 10 ids", flush=True)
    for name in spaces:
        figures[f"stale_{name}"] = timed(lambda n=name: call(n, "memory_stale", {}), 5)
        some = ids[name][:: max(1, len(ids[name]) // 10)][:10]
        figures[f"get_{name}"] = timed(lambda n=name, s=some: call(n, "memory_get",
                                                                   {"ids": s}), 20)
    print("[3/4] the daemon's check in this process (20 memories a page)", flush=True)
    memories = captured(anchored, items)
    figures["discover"] = discover_ms(anchored)
    figures["in_process"] = in_process(memories, 3)

    print("[4/4] edit six cited files, commit, search again", flush=True)
    chosen, expected = edit(anchored, items)
    for path, how in chosen.items():
        note(f"{how:<14} {path} (cited by {sum(1 for k in expected if k[1] == path)} anchors)")
    time.sleep(2.5)  # past RACY_NS: the edited files' mtimes are trusted again
    after_pages: dict = {}
    first_ms, _ = ms_of(lambda: call("anchored", "memory_search", {"query": qs[0],
                                                                     "top_k": TOP_K}))
    t2 = search_rounds(env, spaces, qs[1:], max(3, args.rounds - 1), after_pages)
    figures["after_first_search_ms"] = first_ms
    figures["after_first_round"] = summary(t2, slice(0, 1))
    figures["after_following"] = summary(t2, slice(1, None))
    touched = [sum(1 for s in page if s in ("changed", "moved", "deleted"))
               for page in after_pages[0]]
    figures["after_pages_with_stale"] = sum(1 for x in touched if x)
    figures["stale_after"] = timed(lambda: call("anchored", "memory_stale", {}), 5)
    stale_out = call("anchored", "memory_stale", {"include_moved": True})
    figures["stale_report"] = {"anchored": stale_out["anchored"], "stale": stale_out["stale"],
                               "files": [f["path"] for f in stale_out["files"]]}
    figures["in_process_after"] = in_process(memories, 3)
    figures["states_in_process"], figures["wrong_in_process"] = \
        states_in_process(memories, expected)
    after = all_states(call, ids["anchored"], items, expected)
    figures["states_after"] = after
    figures["expected_after"] = dict(Counter(expected.values()))
    figures["runtime_s"] = time.perf_counter() - started
    figures["load_end"] = psutil.getloadavg()[0]
    report(figures, args)


def all_states(call, ids: list[int], items: list[dict] | None = None,
               expected: dict | None = None) -> dict:
    """Every memory's code state (memory_get, which checks them and re-anchors moved code),
    and where the state differs from what the edits should give."""
    memories: Counter = Counter()
    anchors: Counter = Counter()
    wrong = []
    n_anchors = 0
    index: dict[int, list[int]] = {}
    for i, memory_id in enumerate(ids):  # a merged item shares its memory's id
        index.setdefault(memory_id, []).append(i)
    ids = list(index)
    for k in range(0, len(ids), 500):
        out = call("anchored", "memory_get", {"ids": ids[k:k + 500], "include_edges": False})
        for m in out["memories"]:
            code = m.get("code") or {}
            memories[code.get("state", "none")] += 1
            found = index[m["id"]]
            for a in code.get("anchors", []):
                n_anchors += 1
                anchors[a["state"]] += 1
                if expected is not None and items is not None:
                    path = a["cites"].split(" in ")[-1].split(":")[0]
                    wants = {expected.get((i, path), "fresh") for i in found}
                    # moved code is re-anchored by the read that saw it: fresh from then on
                    if a["state"] not in wants and \
                            not ("moved" in wants and a["state"] == "fresh"):
                        wrong.append({"memory": found, "id": m["id"], "cites": a["cites"],
                                      "state": a["state"], "expected": sorted(wants),
                                      "detail": a.get("detail", "")})
                elif a["state"] != "fresh":
                    wrong.append({"id": m["id"], "cites": a["cites"], "state": a["state"],
                                  "detail": a.get("detail", "")})
    return {"memories": memories, "anchors": anchors, "per_memory": n_anchors / len(ids),
            "ids": len(ids),
            "wrong": wrong}


def report(f: dict, args) -> None:
    def row(label: str, s: dict) -> str:
        return (f"  {label:<44} {s['anchored_med']:6.1f} {s['anchored_p90']:6.1f}   "
                f"{s['control_med']:6.1f} {s['control_p90']:6.1f}   {s['diff_med']:+6.1f} "
                f"{s['diff_p90']:+6.1f}   {s['n']:4d}")

    def spread(label: str, a: list[float], c: list[float] | None) -> str:
        if c is None:
            return f"  {label:<44} {med(a):6.1f} {p90(a):6.1f}"
        return (f"  {label:<44} {med(a):6.1f} {p90(a):6.1f}   {med(c):6.1f} {p90(c):6.1f}   "
                f"{med(a) - med(c):+6.1f}        {len(a):4d}")

    print()
    print(f"anchor checks, {args.n} memories, client wall time over gRPC in ms (run took "
          f"{f['runtime_s']:.0f} s; load average {f['load_start']:.1f} at the start, "
          f"{f['load_end']:.1f} at the end)")
    print(f"  {'':<44} {'anchored':>13}   {'control':>13}   {'a - c':>13}   {'n':>4}")
    print(f"  {'':<44} {'median':>6} {'p90':>6}   {'median':>6} {'p90':>6}   {'median':>6} "
          f"{'p90':>6}")
    print(row("memory_search top_k 10, warm", f["search"]))
    print(spread("memory_stale (all memories checked)", f["stale_anchored"],
                 f["stale_control"]))
    print(spread("memory_get, 10 ids", f["get_anchored"], f["get_control"]))
    if "idle" in f:
        print(spread(f"search after {IDLE_S:.0f} s idle (git looked up again)",
                     f["idle"]["anchored"], f["idle"]["control"]))
    print(spread("  the lookup alone, in process (3 git runs)", f["discover"], None))
    ip = f["in_process"]
    print(f"  {'freshness() of 20 memories, in process':<44} {ip['page_med']:6.2f} "
          f"{ip['page_p90']:6.2f}   ({ip['anchors_per_page']:.0f} anchors a page, "
          f"n={ip['pages']})")
    print("  after editing six cited files (committed):")
    print(f"  {'  the first search after the edit':<44} {f['after_first_search_ms']:6.1f}")
    print(row("  search, first round after the edit", f["after_first_round"]))
    print(row("  search, the rounds after it", f["after_following"]))
    print(spread("  memory_stale", f["stale_after"], None))
    ip = f["in_process_after"]
    print(f"  {'  freshness() of 20 memories, in process':<44} {ip['page_med']:6.2f} "
          f"{ip['page_p90']:6.2f}   (max {ip['page_max']:.1f}; nothing re-anchored in process)")
    print(f"  pages of the first round showing a changed/moved memory: "
          f"{f['after_pages_with_stale']} of {f['after_first_round']['n']}")
    sr = f["stale_report"]
    print(f"  memory_stale(include_moved): {sr['stale']} of {sr['anchored']} memories, files "
          f"{', '.join(sr['files'])}")
    b, a = f["states_before"], f["states_after"]
    print(f"  states before the edits: memories {dict(b['memories'])}, anchors "
          f"{dict(b['anchors'])}")
    print(f"  states after (memory_get of all): memories {dict(a['memories'])}, anchors "
          f"{dict(a['anchors'])}; expected for the edited files' anchors "
          f"{f['expected_after']}")
    print(f"  states after, the daemon's check in process: {dict(f['states_in_process'])}")
    if f["wrong_in_process"]:
        print(f"  UNEXPECTED states in process: {len(f['wrong_in_process'])}")
        for w in f["wrong_in_process"][:10]:
            print(f"    {w}")
    for label, s in (("before", b), ("after", a)):
        if s["wrong"]:
            print(f"  UNEXPECTED states {label} the edits: {len(s['wrong'])}")
            for w in s["wrong"][:10]:
                print(f"    {w}")


if __name__ == "__main__":
    sys.exit(main())
