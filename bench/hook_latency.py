"""How long an agent hook takes, end to end: spawn `memnest-hook` with the editor's hook JSON
on stdin, until it exits having printed its answer. Prints figures; asserts nothing.

Against a private memnestd on a temp socket with the offline model (bench/core.py's Env), in
a workspace of N synthetic memories (default 10,000; --quick 1,000):

  prompt (warm)      UserPromptSubmit with distinct questions, daemon warm: p50 / p95
  session-start      SessionStart digest, daemon warm: p50 / p95
  stop               Stop with a working turn in the transcript (the capture request): p50
  prompt (cold)      the first SessionStart when no daemon runs (the hook starts it; model
                     load and the workspace's open included), then the first prompt after it
  floors             spawn `python -c pass`; spawn python importing what the hook imports
                     (gRPC and the generated messages); memory_search over gRPC in process

Run:  .venv/bin/python bench/hook_latency.py [--quick] [--size N] [--reps N]
      (~5 min at 10k, most of it building the workspace)
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import (  # noqa: E402
    BIN,
    Env,
    cleaned_up,
    ingest,
    latency,
    note,
    synthetic_queries,
    synthetic_texts,
)

HOOK = BIN / "memnest-hook"
PYTHON = BIN / "python"


def spawn_ms(argv: list[str], payload: dict | None, env: dict, cwd: Path) -> tuple[float, bytes]:
    data = json.dumps(payload).encode() if payload is not None else b""
    started = time.perf_counter()
    out = subprocess.run(argv, input=data, env=env, cwd=str(cwd), capture_output=True,
                         timeout=120)
    return (time.perf_counter() - started) * 1000, out.stdout


def hook_ms(event: str, payload: dict, env: dict, cwd: Path) -> tuple[float, bytes]:
    return spawn_ms([str(HOOK), event], payload, env, cwd)


def show(label: str, values: list[float], extra: str = "") -> None:
    s = latency(values)
    note(f"{label:<58} p50 {s['p50']:7.1f} ms   p95 {s['p95']:7.1f} ms   (n={s['n']}){extra}")


def transcript(folder: Path) -> Path:
    turn = [{"type": "user", "message": {"role": "user", "content": "fix the cart test"}}]
    for n in range(3):
        turn.append({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{n}", "name": "Edit", "input": {}}]}})
    path = folder / "transcript.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in turn) + "\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1k memories, fewer repetitions")
    parser.add_argument("--size", type=int, default=None, help="memories in the workspace")
    parser.add_argument("--reps", type=int, default=None, help="hook runs per figure")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()
    size = args.size or (1000 if args.quick else 10_000)
    reps = args.reps or (15 if args.quick else 40)
    env = Env()
    with cleaned_up(env, args.keep) as outcome:
        run(env, size, reps)
    return 130 if outcome.interrupted else 0


def run(env: Env, size: int, reps: int) -> None:
    print(f"memnest hook latency: {size} memories, {reps} runs per figure", flush=True)
    workspace = env.workspace("hooks")
    hook_env = {**env.env, "MEMNEST_HOOK_BUDGET_MS": "60000"}  # measure, never cut short
    texts = synthetic_texts(size)
    queries = synthetic_queries(3 * reps + 10, set(texts))

    env.start_daemon()
    rate = ingest(env, workspace, texts)
    note(f"built the workspace at {rate:.0f} memories/s")

    client = env.client()
    for q in queries[:5]:  # warm the daemon's caches as a session would
        client.call_tool("memory_search", {"query": q, "top_k": 5}, str(workspace))
    grpc = []
    for q in queries[5:5 + reps]:
        started = time.perf_counter()
        client.call_tool("memory_search", {"query": q, "top_k": 5, "preview_chars": 300},
                         str(workspace))
        grpc.append((time.perf_counter() - started) * 1000)

    floor = [spawn_ms([str(PYTHON), "-c", "pass"], None, env.env, workspace)[0]
             for _ in range(reps)]
    imports = [spawn_ms([str(PYTHON), "-c", "import grpc, memnest_proto.memnest_pb2_grpc"],
                        None, env.env, workspace)[0] for _ in range(reps)]
    warm, injected = [], 0
    for n, q in enumerate(queries[5 + reps:5 + 2 * reps]):
        ms, out = hook_ms("prompt", {"session_id": f"bench-{n}", "prompt": q,
                                     "hook_event_name": "UserPromptSubmit"}, hook_env, workspace)
        warm.append(ms)
        injected += bool(out.strip())
    starts = [hook_ms("session-start", {"session_id": f"start-{n}", "source": "startup"},
                      hook_env, workspace)[0] for n in range(reps)]
    with tempfile.TemporaryDirectory() as tmp:
        path = transcript(Path(tmp))
        stops = [hook_ms("stop", {"session_id": f"stop-{n}", "transcript_path": str(path),
                                  "stop_hook_active": False}, hook_env, workspace)[0]
                 for n in range(reps)]

    print("warm daemon", flush=True)
    show("hook: prompt -> recall (spawn to exit)", warm,
         f", {injected} of {len(warm)} prompts injected something")
    show("hook: session start -> digest", starts)
    show("hook: stop -> capture request", stops)
    print("floors", flush=True)
    show("spawn python -c pass", floor)
    show("spawn python importing grpc + the generated messages", imports)
    show("memory_search over gRPC in process (the daemon's share)", grpc)

    print("cold daemon (the hook starts it)", flush=True)
    cold_start, first_prompt = [], []
    for n in range(3):
        env.stop_daemon()
        ms, _ = hook_ms("session-start", {"session_id": f"cold-{n}", "source": "startup"},
                        hook_env, workspace)
        cold_start.append(ms)
        ms, _ = hook_ms("prompt", {"session_id": f"cold-{n}", "prompt": queries[-1 - n]},
                        hook_env, workspace)
        first_prompt.append(ms)
    show("hook: session start with no daemon running", cold_start)
    show("hook: the first prompt after it", first_prompt)


if __name__ == "__main__":
    sys.exit(main())
