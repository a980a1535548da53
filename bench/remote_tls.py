"""What mutual TLS on loopback costs a call: memory_search latency over the daemon's TLS port
(MEMNEST_REMOTE=127.0.0.1:PORT, a client certificate) next to the same calls on its Unix
socket. Prints figures; asserts nothing.

One private memnestd (bench/core.py's Env, offline model) listening on its socket and on
127.0.0.1:<free port> with certificates made by `memnest-ctl tls`'s code; a workspace of
--size synthetic memories (default 1,000) stored over the socket; then --calls searches
(default 300, top_k 10) on each path, with queries of its own (the daemon caches query
embeddings), in rounds of 20 that alternate which path goes first, so that drift on a shared
machine hits both alike, after 20 untimed warm-up calls each. A `Status`
round trip (no tool, no search) on each path shows the transport's own share. Channels stay
open between calls, as a shim's does: the TLS handshake is paid once per connection, and is
timed separately (fresh client → first Status answered).

Run:  .venv/bin/python bench/remote_tls.py [--size N] [--calls N]
"""
import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from core import Env, cleaned_up, ingest, note, pct, synthetic_queries, synthetic_texts  # noqa: E402

from memnest_proto import memnest_pb2 as pb  # noqa: E402
from memnest_shims.cli import tls_setup  # noqa: E402
from memnest_shims.client import DaemonClient  # noqa: E402

TOP_K = 10
ROUND = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_certs(folder: Path) -> None:
    tls_setup.prepare_dir(folder)
    ca_key, ca_cert = tls_setup.make_ca()
    server_key, server_cert = tls_setup.issue(ca_key, ca_cert, "localhost", server=True,
                                              hosts=["localhost", "127.0.0.1"], days=2)
    client_key, client_cert = tls_setup.issue(ca_key, ca_cert, "bench", server=False, days=2)
    for name, data, mode in (("ca.crt", tls_setup.cert_pem(ca_cert), 0o644),
                             ("server.key", tls_setup.key_pem(server_key), 0o600),
                             ("server.crt", tls_setup.cert_pem(server_cert), 0o644),
                             ("bench.key", tls_setup.key_pem(client_key), 0o600),
                             ("bench.crt", tls_setup.cert_pem(client_cert), 0o644)):
        tls_setup.write_private(folder / name, data, False, mode)


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def summary(values: list[float]) -> str:
    return (f"median {pct(values, 50):6.2f} ms   p90 {pct(values, 90):6.2f} ms   "
            f"p99 {pct(values, 99):6.2f} ms   (n={len(values)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=1000, help="memories in the workspace")
    parser.add_argument("--calls", type=int, default=300, help="timed searches per path")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON too")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args()

    env = Env()
    with cleaned_up(env, args.keep) as outcome:
        tls = env.root / "tls"
        make_certs(tls)
        workspace = env.workspace("remote")
        tls_setup.write_private(tls / "clients.json",
                                json.dumps({"bench": [str(workspace)]}).encode(), False)
        address = f"127.0.0.1:{free_port()}"
        env.env.update(MEMNEST_TLS_LISTEN=address, MEMNEST_TLS_DIR=str(tls))
        env.start_daemon()
        os.environ.update(MEMNEST_TLS_CA=str(tls / "ca.crt"),
                          MEMNEST_TLS_CERT=str(tls / "bench.crt"),
                          MEMNEST_TLS_KEY=str(tls / "bench.key"))
        texts = synthetic_texts(args.size)
        rate = ingest(env, workspace, texts)
        note(f"{args.size} memories stored over the socket ({rate:.0f}/s)")
        # distinct queries per path: the daemon caches query embeddings, so a query the
        # other path has just asked would be cheaper
        queries = synthetic_queries(2 * (args.calls + ROUND), set(texts))
        warm, timed_queries = queries[:2 * ROUND], queries[2 * ROUND:]

        local = env.client()
        remote = DaemonClient(client_name="bench", remote=address)
        paths = {"unix socket": local, "TLS on 127.0.0.1": remote}

        def search(client: DaemonClient, query: str) -> None:
            client.call_tool("memory_search", {"query": query, "top_k": TOP_K}, str(workspace))

        handshakes = []
        for _ in range(20):
            fresh = DaemonClient(client_name="bench", remote=address)
            handshakes.append(timed(lambda c=fresh: c.status(timeout=10)))
            fresh.close()
        for i, client in enumerate(paths.values()):
            for q in warm[i::2]:
                search(client, q)
        results: dict[str, dict[str, list[float]]] = {
            name: {"search": [], "status": []} for name in paths}
        for start in range(0, args.calls, ROUND):
            order = list(enumerate(paths.items()))
            if (start // ROUND) % 2:
                order.reverse()  # each path goes first in every other round
            for i, (name, client) in order:
                batch = timed_queries[i::2][start:start + ROUND]
                for q in batch:
                    results[name]["search"].append(timed(lambda c=client, q=q: search(c, q)))
                stub = client._connect()
                for _ in batch:
                    results[name]["status"].append(
                        timed(lambda s=stub: s.Status(pb.StatusRequest(), timeout=10)))
        remote.close()
        if outcome.interrupted:
            return 130

        print(f"\nmemory_search, top_k {TOP_K}, {args.size} memories, {args.calls} calls per "
              "path (DaemonClient.call_tool, channel kept open)")
        for name, figures in results.items():
            print(f"  {name:<18} search  {summary(figures['search'])}")
        for name, figures in results.items():
            print(f"  {name:<18} Status  {summary(figures['status'])}")
        extra = pct(results["TLS on 127.0.0.1"]["search"], 50) - \
            pct(results["unix socket"]["search"], 50)
        print(f"  TLS adds {extra:+.2f} ms to the median search")
        print(f"  new TLS connection (handshake + first Status): {summary(handshakes)}")
        if args.json:
            print(json.dumps({"size": args.size, "calls": args.calls, "results": results,
                              "handshakes_ms": handshakes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
