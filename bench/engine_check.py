"""Checks a LadybugDB Python package against what memnest needs from its storage engine, and
prints what it finds. Runs in any environment that has the engine, without memnest:

    python bench/engine_check.py ladybug          # the engine memnest ships with
    python bench/engine_check.py real_ladybug     # the one it used before (0.15.3)

1. history: seeded random histories of creates, rewrites of every column (STRING, STRING[],
   FLOAT[4], INT64), detach deletes, checkpoints and reopens, read back every 10 steps and
   compared with a plain model; prints the first step at which a row differed, and in which
   columns.
2. wal: a child process commits rows with a 384-float array and 3 KB of text each, then is
   killed before any checkpoint; prints how many rows a reopen finds.
3. checkpoints: one small write and a CHECKPOINT, 2,000 times, under a 256 MiB max_db_size.
"""
import argparse
import importlib
import os
import random
import signal
import subprocess
import sys
import tempfile
import time


def _rows(conn, query: str) -> list[list]:
    result = conn.execute(query)
    out = []
    while result.has_next():
        out.append(result.get_next())
    return out


def history(lb, seed: int, steps: int) -> str:
    rng = random.Random(seed)
    path = os.path.join(tempfile.mkdtemp(), "db")
    db = lb.Database(path)
    conn = lb.Connection(db)
    conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY, content STRING, tags STRING[], "
                 "n INT64, e FLOAT[4])")
    model: dict[int, dict] = {}
    columns = ("content", "tags", "n", "e")

    def row(memory_id: int) -> dict:
        words = ["alpha", "beta", "gamma", f"t{rng.randint(0, 50)}", "x" * rng.randint(1, 40)]
        return {"id": memory_id,
                "content": " ".join(rng.choice(words) for _ in range(rng.randint(1, 30))),
                "tags": [rng.choice(words) for _ in range(rng.randint(0, 4))],
                "n": rng.randint(0, 9), "e": [float(rng.randint(0, 99)) for _ in range(4)]}

    next_id = 0
    try:
        for step in range(steps):
            op = rng.random()
            if op < 0.3 or len(model) < 5:
                next_id += 1
                model[next_id] = row(next_id)
                conn.execute("CREATE (:M {id: $id, content: $content, tags: $tags, n: $n, "
                             "e: $e})", model[next_id])
            elif op < 0.55:
                memory_id = rng.choice(list(model))
                fresh = row(memory_id)
                model[memory_id] = {k: fresh[k] if rng.random() < 0.5 else v
                                    for k, v in model[memory_id].items()}
                conn.execute("MATCH (m:M) WHERE m.id = $id SET m.content = $content, "
                             "m.tags = $tags, m.n = $n, m.e = $e", model[memory_id])
            elif op < 0.65:
                memory_id = rng.choice(list(model))
                conn.execute("MATCH (m:M) WHERE m.id = $id DETACH DELETE m", {"id": memory_id})
                del model[memory_id]
            elif op < 0.8:
                conn.execute("CHECKPOINT")
            elif op < 0.85:
                conn.close()
                db.close()
                db = lb.Database(path)
                conn = lb.Connection(db)
            if step % 10 == 0 or step == steps - 1:
                got = {r[0]: dict(zip(columns, r[1:])) for r in _rows(
                    conn, "MATCH (m:M) RETURN m.id, m.content, m.tags, m.n, m.e")}
                wrong = [i for i in model if got.get(i) != {c: model[i][c] for c in columns}]
                if wrong or len(got) != len(model):
                    which = sorted({c for i in wrong if i in got for c in columns
                                    if got[i][c] != model[i][c]})
                    return (f"step {step}: {len(wrong)} of {len(model)} rows differ "
                            f"(columns {', '.join(which) or 'rows missing'})")
    except Exception as exc:  # the engine's own failure is a finding too
        return f"step {step}: {type(exc).__name__}: {str(exc).splitlines()[0][:100]}"
    return f"{steps} steps, every row as written"


def wal(module: str, rows: int) -> str:
    path = os.path.join(tempfile.mkdtemp(), "db")
    subprocess.run([sys.executable, __file__, module, "--write-and-die", path, str(rows)],
                   check=False)
    lb = importlib.import_module(module)
    try:
        db = lb.Database(path)
        found = _rows(lb.Connection(db), "MATCH (m:M) RETURN count(*)")[0][0]
    except Exception as exc:
        return f"reopen failed: {str(exc).splitlines()[0][:100]}"
    return f"{found} of {rows} committed rows back after kill -9"


def _write_and_die(module: str, path: str, rows: int) -> None:
    lb = importlib.import_module(module)
    conn = lb.Connection(lb.Database(path))
    conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY, content STRING, e FLOAT[384])")
    conn.execute("CHECKPOINT")
    for i in range(rows):
        conn.execute("CREATE (:M {id: $i, content: $c, e: $e})",
                     {"i": i, "c": f"row {i} " * 400, "e": [float(i)] * 384})
    os.kill(os.getpid(), signal.SIGKILL)


def checkpoints(lb, count: int) -> str:
    path = os.path.join(tempfile.mkdtemp(), "db")
    db = lb.Database(path, buffer_pool_size=64 << 20, max_db_size=256 << 20)
    conn = lb.Connection(db)
    conn.execute("CREATE NODE TABLE M(id INT64 PRIMARY KEY, tags STRING[])")
    started = time.perf_counter()
    for i in range(count):
        try:
            conn.execute("CREATE (:M {id: $i, tags: ['a', 'b']})", {"i": i})
            conn.execute("CHECKPOINT")
        except Exception as exc:
            return f"failed after {i} checkpoints: {str(exc).splitlines()[0][:100]}"
    return f"{count} checkpoints, {(time.perf_counter() - started) / count * 1000:.1f} ms each"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", help="ladybug or real_ladybug")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--only", choices=["history", "wal", "checkpoints"])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--write-and-die", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_and_die:
        _write_and_die(args.module, args.write_and_die[0], int(args.write_and_die[1]))
        return
    lb = importlib.import_module(args.module)
    version = getattr(lb, "__version__", "?")
    print(f"{args.module} {version}")
    if args.only in (None, "history"):
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            print(f"  history seed {seed}: {history(lb, seed, args.steps)}", flush=True)
    if args.only in (None, "wal"):
        print(f"  wal: {wal(args.module, 50)}", flush=True)
    if args.only in (None, "checkpoints"):
        print(f"  checkpoints: {checkpoints(lb, 2000)}", flush=True)


if __name__ == "__main__":
    main()
