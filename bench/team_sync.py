"""Team memory through git (issue 22, part 1): what bringing a teammate's shared folder in
costs, and what the "did anything arrive?" check adds to every call.

Against a private memnestd on a temp socket with the offline model (bench/core.py's Env):

  share      N synthetic memories (default 5,000) stored with scope "shared" in clone A
             (one file each under .memnest/shared/), committed and pushed to a bare origin
  sync       a fresh clone B of that origin, and its first call (memory_sync): every file
             read, checked, embedded and ingested (dedup, merge, conflict flags)
  no change  the per-call cost once nothing changed: the daemon's check (folder.fingerprint:
             a few stat calls) timed in this process, median over many calls; and a cheap
             tool call (memory_list limit 1) in B against one in a workspace holding the
             same N memories privately (no shared folder), alternating, median of many
  no-op      memory_sync again with nothing new (`all`: every file read and compared)

Run:  .venv/bin/python bench/team_sync.py [--n 5000] [--calls 300] [--keep]
"""
import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import Env, cleaned_up, note, synthetic_texts  # noqa: E402
from memnest_daemon.team import folder  # noqa: E402


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com",
                    *args], cwd=cwd, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    env = Env()
    with cleaned_up(env, args.keep) as outcome:
        env.start_daemon()
        client = env.client()
        root = env.root
        git(root, "init", "-q", "--bare", "-b", "main", "origin.git")
        a = root / "a"
        git(root, "clone", "-q", "origin.git", "a")
        (a / "README.md").write_text("bench\n")
        texts = synthetic_texts(args.n)
        started = time.perf_counter()
        for i in range(0, len(texts), 250):
            client.call_tool("memory_store", {"items": [
                {"content": t, "scope": "shared"} for t in texts[i:i + 250]]}, str(a))
        share_s = time.perf_counter() - started
        files = list((a / ".memnest" / "shared").glob("*.json"))
        size = sum(p.stat().st_size for p in files)
        note(f"A: {len(files)} shared files ({size / 2**20:.1f} MiB) in {share_s:.1f} s")
        git(a, "add", ".")
        git(a, "commit", "-qm", "shared memories")
        git(a, "push", "-q", "origin", "HEAD:main")
        git(root, "clone", "-q", "origin.git", "b")
        b = (root / "b").resolve()
        started = time.perf_counter()
        report = client.call_tool("memory_sync", {}, str(b))
        sync_s = time.perf_counter() - started
        note(f"B: first sync {sync_s:.1f} s: came in {len(report['came_in'])}, merged "
             f"{len(report['merged'])}, conflicts {len(report['conflicts'])}, problems "
             f"{len(report['problems'])}")
        status = subprocess.run(["git", "status", "--porcelain"], cwd=b, capture_output=True,
                                text=True).stdout
        note(f"B: git status after the sync: {len(status.splitlines())} changed paths")
        started = time.perf_counter()
        again = client.call_tool("memory_sync", {"all": True}, str(b))
        noop_s = time.perf_counter() - started
        note(f"B: memory_sync all=true with nothing new: {noop_s:.2f} s "
             f"({again['files_read']} files read)")

        checks = []
        for _ in range(args.calls * 10):
            t0 = time.perf_counter_ns()
            folder.fingerprint(str(b))
            checks.append((time.perf_counter_ns() - t0) / 1000)
        plain = env.workspace("plain")  # the same memories, private, no shared folder
        for i in range(0, len(texts), 250):
            client.call_tool("memory_store", {"items": [
                {"content": t} for t in texts[i:i + 250]]}, str(plain))
        shared_ms, plain_ms, origin_ms = [], [], []
        for _ in range(args.calls):
            for ws, out in ((b, shared_ms), (plain, plain_ms), (a, origin_ms)):
                t0 = time.perf_counter()
                client.call_tool("memory_list", {"limit": 1}, str(ws))
                out.append((time.perf_counter() - t0) * 1000)
        print(f"\nteam sync, {args.n} memories, offline model, {len(files)} files "
              f"({size / 2**20:.1f} MiB)")
        print(f"  share (store with scope shared, batches of 250): {share_s:.1f} s")
        print(f"  first sync into a fresh clone: {sync_s:.1f} s "
              f"({args.n / sync_s:.0f} memories/s)")
        print(f"  sync all=true, nothing new: {noop_s:.2f} s")
        print(f"  fingerprint check in process: median "
              f"{statistics.median(checks):.1f} us over {len(checks)}")
        print(f"  memory_list limit 1: median {statistics.median(shared_ms):.2f} ms with "
              f"{args.n} shared, {statistics.median(plain_ms):.2f} ms with the same "
              "memories private, no shared folder; "
              f"{statistics.median(origin_ms):.2f} ms in A, where they were shared "
              f"({args.calls} calls each, alternating)")
        if outcome.interrupted:
            return


if __name__ == "__main__":
    main()
