"""Retrieval quality on LOCOMO: does memory_search put the gold evidence in front of the agent?

For each LOCOMO conversation file (default the four in ../shared/locomo: conv-26, conv-30,
conv-42 and conv-44, plus any files named on the command line; MEMNEST_LOCOMO_DIR moves the
default folder):

1. Start a private memnestd on a temp socket (nothing touches your own daemon or workspaces)
   with the offline MiniLM model.
2. Ingest the conversation into a fresh workspace of its own through the real `memory_store`
   tool, in `items` batches of one session each: one memory per dialogue turn, reading
   "[<session date>] <speaker>: <text>" plus " [shared a photo: <caption>]" when the turn has
   an image caption, tagged with the speaker. The returned ids map memories back to `dia_id`s.
3. Ask every question that has gold evidence with `memory_search(top_k=20)`, once per fusion
   mode (every mode the daemon's `memory_search` schema offers, or --modes), and score the
   results against the gold `evidence` turn ids.

Printed per conversation and over all of them, by question category and overall:
recall@5, recall@10, recall@20 (the share of a question's evidence turns found in the top k,
averaged over questions) and MRR@20 (1 / rank of the first evidence turn, 0 if none in the
top 20); plus ingest time and search p50 per mode. No LLM is involved and nothing is random:
the same input gives the same numbers.

The ranking's defaults were chosen looking at the four default conversations (TUNED_ON): the
figures pooled over those are in-sample, the ones over any other conversation given on the
command line held out, and both are printed side by side. Out-of-sample figures for the four
themselves come from the leave-one-out part. A change is kept only if the held-out figures rise too.

Then (with three or more conversations; --no-loo skips it) context ranking's constants are
chosen leave-one-conversation-out (bench/locomo_loo.py): for each conversation, the grid point
best on the others, reported on it, next to the defaults' figure. That pooled figure is the
one the retrieval targets name.

Run:  make bench-locomo                          (= .venv/bin/python bench/locomo.py)
      .venv/bin/python bench/locomo.py --modes context --workdir /tmp/locomo-ws
      .venv/bin/python bench/locomo.py --modes rrf other.json --json
      .venv/bin/python bench/locomo.py --workdir /tmp/locomo-ws   keep and reuse the ingested
                                          workspaces (only the search half runs the next time)
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
from memnest_daemon.search.ranking import DEFAULT_FUSION
from memnest_shims.client import DaemonClient

BIN = Path(sys.executable).parent
OFFLINE_MODEL = "memnest/all-MiniLM-L6-v2-int8"
LOCOMO_DIR = Path(os.environ.get("MEMNEST_LOCOMO_DIR",
                               Path(__file__).resolve().parents[2] / "shared" / "locomo"))
DEFAULT_FILES = ("conv-26.json", "conv-30.json", "conv-42.json", "conv-44.json")
# The conversations the ranking's defaults were chosen on (issue 6: conv-26 and conv-30;
# issue 23: all four, with leave-one-out figures after the run); any other is held out.
TUNED_ON = ("conv-26", "conv-30", "conv-42", "conv-44")
TOP_K = 20
CUTOFFS = (5, 10, 20)
# LOCOMO's question categories (numbering of the released dataset).
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
              5: "adversarial"}
FORMAT_VERSION = "1"  # bump when the memory text changes: --workdir then re-ingests
_DIA = re.compile(r"D\d+:\d+")


# -- the data --------------------------------------------------------------------------------

def load_conversations(path: Path) -> list[dict]:
    """A file holds one conversation (the sessions at the top level, or wrapped under
    `conversation` as in the released dataset) or a list of them. Returns, per conversation:
    name, speakers, sessions [(number, date, [turn...])], questions [(text, category, gold)]."""
    data = json.loads(path.read_text())
    samples = data if isinstance(data, list) else [data]
    out = []
    for n, sample in enumerate(samples):
        conv = sample.get("conversation", sample)
        numbers = sorted(int(k.split("_")[1]) for k, v in conv.items()
                         if re.fullmatch(r"session_\d+", k) and isinstance(v, list) and v)
        sessions = [(s, session_date(conv.get(f"session_{s}_date_time", "")),
                     conv[f"session_{s}"]) for s in numbers]
        questions = []
        for qa in sample.get("qa", conv.get("qa", [])):
            gold = {_canonical(e) for ev in qa.get("evidence") or [] for e in _DIA.findall(ev)}
            if gold:
                questions.append((qa["question"], int(qa.get("category", 0)), gold))
        name = path.stem if len(samples) == 1 else \
            f"{path.stem}#{sample.get('sample_id', n)}"
        out.append({"name": name, "speakers": [conv.get("speaker_a"), conv.get("speaker_b")],
                    "sessions": sessions, "questions": questions})
    return out


def _canonical(dia_id: str) -> str:
    session, turn = dia_id[1:].split(":")
    return f"D{int(session)}:{int(turn)}"


def session_date(raw: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '8 May 2023' (the time of day is dropped)."""
    m = re.search(r"(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", raw)
    return f"{int(m.group(1))} {m.group(2)} {m.group(3)}" if m else raw.strip()


def turn_text(date: str, turn: dict) -> str:
    text = f"[{date}] {turn['speaker']}: {turn['text'].strip()}"
    caption = (turn.get("blip_caption") or "").strip()
    if caption:
        text += f" [shared a photo: {caption}]"
    return text


def memory_items(conv: dict):
    """Per session: (dia_ids, memory_store items)."""
    for _, date, turns in conv["sessions"]:
        turns = [t for t in turns if (t.get("text") or "").strip()]
        yield ([_canonical(t["dia_id"]) for t in turns],
               [{"content": turn_text(date, t), "tags": [t["speaker"]]} for t in turns])


# -- scoring ---------------------------------------------------------------------------------

def score_question(ranked_dia: list[list[str]], gold: set[str]) -> dict:
    """ranked_dia: per result position, the dia_ids of that memory (usually one)."""
    out = {}
    for k in CUTOFFS:
        found = {d for ids in ranked_dia[:k] for d in ids} & gold
        out[f"r@{k}"] = len(found) / len(gold)
    out["mrr"] = next((1.0 / rank for rank, ids in enumerate(ranked_dia[:TOP_K], 1)
                       if gold & set(ids)), 0.0)
    return out


def aggregate(rows: list[tuple[int, dict]]) -> dict:
    """rows: (category, score_question result). Means by category and overall."""
    table = {}
    for label, keep in [(CATEGORIES.get(c, f"cat-{c}"), c) for c in
                        sorted({c for c, _ in rows})] + [("overall", None)]:
        picked = [s for c, s in rows if keep is None or c == keep]
        table[label] = {"n": len(picked), **{m: sum(s[m] for s in picked) / len(picked)
                                              for m in ("r@5", "r@10", "r@20", "mrr")}}
    return table


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = (len(ordered) - 1) * p / 100
    lo, hi = int(pos), min(int(pos) + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


# -- the private daemon ----------------------------------------------------------------------

class PrivateDaemon:
    def __init__(self, extra_env: dict | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="memnest-locomo-"))
        os.chmod(self.root, 0o700)
        self.socket = self.root / "memnestd.sock"
        self.log = self.root / "memnestd.log"
        self.env = {**os.environ, "MEMNEST_SOCKET": str(self.socket),
                    "MEMNEST_LOG_FILE": str(self.log), "MEMORY_EMBEDDING_MODEL": OFFLINE_MODEL,
                    **(extra_env or {})}
        for key in ("MEMORY_WORKSPACE", "MEMORY_DB_PATH"):
            self.env.pop(key, None)
        self.client = DaemonClient(self.socket, client_name="bench-locomo", autostart=False)
        self.proc: subprocess.Popen | None = None
        self.stopped = False

    def start(self) -> None:
        self.proc = subprocess.Popen([str(BIN / "memnestd"), "--spawned"], env=self.env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 120
        while not self.client.is_running():
            if self.proc.poll() not in (None, 0) or time.monotonic() > deadline:
                raise RuntimeError(f"memnestd did not start; see {self.log}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            if self.client.is_running():
                self.client.shutdown("bench-locomo done")
        except grpc.RpcError:
            pass  # already gone: the wait below returns at once
        self.client.close()
        if self.proc is not None:
            try:
                self.proc.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.proc.terminate()
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def call(self, tool: str, args: dict, workspace: Path) -> dict:
        return self.client.call_tool(tool, args, str(workspace))

    def fusion_modes(self) -> list[str]:
        for t in self.client.list_tools():
            if t.name == "memory_search":
                schema = json.loads(t.input_schema_json)
                return list(schema["properties"].get("fusion", {}).get("enum", []))
        return []


# -- ingest and search -----------------------------------------------------------------------

def ingest(daemon: PrivateDaemon, conv: dict, workspace: Path) -> tuple[dict, float, dict]:
    """Store every turn; returns ({memory id: [dia_id...]}, seconds, {status: count}). A turn
    the daemon folds into an existing memory (status duplicate or merged) maps to that one."""
    id_to_dia: dict[int, list[str]] = {}
    statuses: dict[str, int] = {}
    started = time.perf_counter()
    for dia_ids, items in memory_items(conv):
        result = daemon.call("memory_store", {"items": items}, workspace)
        for dia, r in zip(dia_ids, result["results"]):
            id_to_dia.setdefault(r["id"], []).append(dia)
            statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return id_to_dia, time.perf_counter() - started, statuses


def ask(daemon: PrivateDaemon, conv: dict, workspace: Path, id_to_dia: dict,
        mode: str) -> tuple[list, list[float]]:
    rows, times = [], []
    for question, category, gold in conv["questions"]:
        started = time.perf_counter()
        result = daemon.call("memory_search", {"query": question, "top_k": TOP_K,
                                               "fusion": mode, "preview_chars": 0}, workspace)
        times.append(time.perf_counter() - started)
        ranked = [id_to_dia.get(r["id"], []) for r in result["results"]]
        rows.append((category, score_question(ranked, gold)))
    return rows, times


def workspace_for(root: Path, path: Path, conv: dict) -> Path:
    digest = hashlib.sha256((FORMAT_VERSION + json.dumps(
        [[d, [i["content"] for i in items]] for d, items in memory_items(conv)])).encode()
    ).hexdigest()[:12]
    ws = root / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', conv['name'])}-{digest}"
    ws.mkdir(parents=True, exist_ok=True)
    return ws.resolve()


# -- output ----------------------------------------------------------------------------------

def print_table(title: str, tables: dict[str, dict]) -> None:
    print(f"\n{title}")
    print(f"  {'mode':<10} {'category':<12} {'n':>4} {'R@5':>6} {'R@10':>6} {'R@20':>6} "
          f"{'MRR@20':>7}")
    for mode, table in tables.items():
        for label, row in table.items():
            print(f"  {mode:<10} {label:<12} {row['n']:>4} {row['r@5']:>6.3f} "
                  f"{row['r@10']:>6.3f} {row['r@20']:>6.3f} {row['mrr']:>7.3f}")


def _split(conversations: dict) -> dict[str, list[str]]:
    """The conversations the ranking was tuned on (in-sample) and the others (held out)."""
    names = list(conversations)
    return {"in-sample": [n for n in names if n in TUNED_ON],
            "held-out": [n for n in names if n not in TUNED_ON]}


def run_loo(kept: list[tuple[dict, Path, dict]]) -> dict:
    """bench/locomo_loo.py over the ingested workspaces: prints and returns the figures."""
    import locomo_loo as loo

    tunings = loo.grid_points()
    print(f"\nleave-one-conversation-out: {len(tunings)} grid points of context ranking "
          f"({', '.join(f'{k} {v}' for k, v in loo.GRID.items())}), in process", flush=True)
    runner = loo.InProcess(OFFLINE_MODEL)
    try:
        per_conv = {conv["name"]: runner.rows(conv, ws, ids, tunings, score_question)
                    for conv, ws, ids in kept}
    finally:
        runner.close()
    chosen = loo.leave_one_out(per_conv, tunings, aggregate)
    out: dict = {"grid": {k: list(v) for k, v in loo.GRID.items()}, "conversations": {}}
    print(f"  {'held out':<10} {'R@20':>6} {'MRR@20':>7}   {'default R@20':>12} "
          f"{'MRR@20':>7}   chosen on the others")
    for name, got in chosen.items():
        held, default = aggregate(got["rows"])["overall"], \
            aggregate(got["default_rows"])["overall"]
        print(f"  {name:<10} {held['r@20']:>6.3f} {held['mrr']:>7.3f}   "
              f"{default['r@20']:>12.3f} {default['mrr']:>7.3f}   {loo.label(got['chosen'])}")
        out["conversations"][name] = {"held_out": held, "default": default,
                                      "chosen": loo.label(got["chosen"])}
    pooled = aggregate([r for got in chosen.values() for r in got["rows"]])
    default = aggregate([r for got in chosen.values() for r in got["default_rows"]])
    print_table("leave-one-out, held-out figures pooled", {"loo": pooled, "default": default})
    out["pooled"], out["default_pooled"] = pooled, default
    return out


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM: clean up the private daemon like Ctrl-C does


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="*", type=Path,
                        help="more LOCOMO conversation files to run besides the default four")
    parser.add_argument("--only", action="store_true",
                        help="run only the files given, not the default four")
    parser.add_argument("--modes", default="",
                        help="comma-separated fusion modes (default: all the daemon offers)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the ingested workspaces here and reuse them next time")
    parser.add_argument("--no-loo", dest="loo", action="store_false",
                        help="skip choosing context ranking's constants leave-one-"
                             "conversation-out (in process after the daemon run, ~12 min)")
    parser.add_argument("--json", action="store_true", help="also print a JSON summary")
    args = parser.parse_args()

    files = ([] if args.only else [LOCOMO_DIR / f for f in DEFAULT_FILES]) + list(args.files)
    convs = [(path, conv) for path in files for conv in load_conversations(path)]
    root = args.workdir.resolve() if args.workdir else Path(tempfile.mkdtemp(
        prefix="memnest-locomo-ws-"))
    root.mkdir(parents=True, exist_ok=True)

    daemon = PrivateDaemon()
    summary: dict = {"model": OFFLINE_MODEL, "top_k": TOP_K, "conversations": {}}
    kept: list[tuple[dict, Path, dict]] = []  # for leave-one-out: (conversation, workspace, ids)
    pooled: dict[str, list] = {}
    per_conv: dict[str, dict[str, list]] = {}
    try:
        signal.signal(signal.SIGTERM, _interrupt)
        daemon.start()
        modes = [m for m in args.modes.split(",") if m.strip()] or daemon.fusion_modes()
        default = (daemon.env.get("MEMORY_FUSION") or "").strip().lower() or DEFAULT_FUSION
        print(f"memnest LOCOMO retrieval bench: model {OFFLINE_MODEL}, top_k {TOP_K}, modes "
              f"{', '.join(modes)} (default: {default}), {len(convs)} conversation(s)",
              flush=True)
        summary["modes"], summary["default_mode"] = modes, default
        for path, conv in convs:
            ws = workspace_for(root, path, conv)
            mapping = ws / "locomo-ids.json"
            n_turns = sum(len(items) for _, items in memory_items(conv))
            if mapping.exists():
                id_to_dia = {int(k): v for k, v in json.loads(mapping.read_text()).items()}
                ingest_s, stored = None, len(id_to_dia)
                print(f"{conv['name']}: reusing {stored} memories in {ws}", flush=True)
            else:
                print(f"{conv['name']}: ingesting {n_turns} turns ...", flush=True)
                id_to_dia, ingest_s, statuses = ingest(daemon, conv, ws)
                stored = len(id_to_dia)
                mapping.write_text(json.dumps(id_to_dia))
                print(f"  .. {stored} memories in {ingest_s:.1f}s "
                      f"({n_turns / ingest_s:.0f} turns/s; "
                      + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + ")",
                      flush=True)
            kept.append((conv, ws, id_to_dia))
            tables, latency = {}, {}
            for mode in modes:
                rows, times = ask(daemon, conv, ws, id_to_dia, mode)
                tables[mode] = aggregate(rows)
                latency[mode] = percentile(times, 50) * 1000
                pooled.setdefault(mode, []).extend(rows)
                per_conv.setdefault(conv["name"], {})[mode] = rows
            print_table(f"{conv['name']}: {len(conv['questions'])} questions with evidence, "
                        f"{stored} memories", tables)
            print("  search p50: " + ", ".join(f"{m} {ms:.1f} ms" for m, ms in latency.items())
                  + ("" if ingest_s is None else f"; ingest {ingest_s:.1f}s"), flush=True)
            summary["conversations"][conv["name"]] = {
                "memories": stored, "questions": len(conv["questions"]), "ingest_s": ingest_s,
                "search_p50_ms": latency, "tables": tables}
        if len(convs) > 1:
            overall = {mode: aggregate(rows) for mode, rows in pooled.items()}
            print_table(f"all {len(convs)} conversations (questions pooled)", overall)
            summary["overall"] = overall
            for label, names in _split(summary["conversations"]).items():
                if not names or len(names) == len(convs):
                    continue
                rows_by_mode = {mode: [r for name in names for r in per_conv[name][mode]]
                                for mode in modes}
                table = {mode: aggregate(rows) for mode, rows in rows_by_mode.items()}
                print_table(f"{label}: {', '.join(names)} (questions pooled)", table)
                summary[label.replace("-", "_")] = {"conversations": names, "tables": table}
        daemon.stop()  # its databases must be free for the in-process run
        if args.loo and len(kept) >= 3:
            summary["leave_one_out"] = run_loo(kept)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        daemon.stop()
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
