"""How fast another tool's files come in (memory_import with `from`): an AGENTS.md of N
sections (default 5,000: a heading and one bullet each, synthetic text), taken in by a
private daemon over gRPC: a dry run, the first import, the same file again (nothing to do),
and the file with one section edited. Prints seconds and pieces per second; asserts nothing.

Run:  .venv/bin/python bench/import_sources.py            (5,000 sections)
      .venv/bin/python bench/import_sources.py --n 20000
"""
import argparse
import sys
import time

from core import Env, cleaned_up, synthetic_texts


def source(texts: list[str]) -> str:
    return "".join(f"## Section {n}\n- {text}\n\n" for n, text in enumerate(texts))


def timed(env: Env, workspace: str, label: str, arguments: dict) -> dict:
    started = time.perf_counter()
    out = env.client().call_tool("memory_import", {"from": "agents-md", **arguments}, workspace)
    seconds = time.perf_counter() - started
    done = {k: out[k] for k in ("store", "update", "unchanged", "moved", "merge", "duplicate",
                                "held", "conflict", "refused") if out[k]}
    print(f"  {label:<28} {seconds:7.2f} s  {out['pieces'] / seconds:8.0f} pieces/s  {done}",
          flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000, help="sections in the file")
    args = parser.parse_args()
    env = Env()
    with cleaned_up(env, keep=False):
        env.start_daemon()
        workspace = env.workspace("sources")
        texts = synthetic_texts(args.n)
        (workspace / "AGENTS.md").write_text(source(texts))
        print(f"AGENTS.md: {args.n} sections, "
              f"{(workspace / 'AGENTS.md').stat().st_size / 1e6:.1f} MB", flush=True)
        ws = str(workspace)
        timed(env, ws, "dry run", {"dry_run": True})
        timed(env, ws, "first import", {})
        timed(env, ws, "again, unchanged", {})
        texts[args.n // 2] += " (edited)"
        (workspace / "AGENTS.md").write_text(source(texts))
        timed(env, ws, "one section edited", {})
    return 0


if __name__ == "__main__":
    sys.exit(main())
