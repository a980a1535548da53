"""The wire contract: generated code matches the proto; the shim stays light."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("ladybug", "real_ladybug", "fastembed", "onnxruntime", "numpy", "tantivy")


def test_generated_code_is_up_to_date(tmp_path):
    subprocess.run([sys.executable, str(ROOT / "proto" / "generate.py"), str(tmp_path)],
                   check=True)
    for name in ("memnest_pb2.py", "memnest_pb2.pyi", "memnest_pb2_grpc.py"):
        committed = (ROOT / "proto" / name).read_bytes()
        fresh = (tmp_path / name).read_bytes()
        assert committed == fresh, f"proto/{name} is stale: run `make proto` and commit"


def test_shim_and_cli_import_nothing_heavy():
    probe = ("import sys, memnest_shims.mcp.main, memnest_shims.cli.main, memnest_shims.client;"
             f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "", f"the shim imported {out}"


def test_tools_list_every_core_tool(daemon):
    names = {t.name for t in daemon.client().list_tools()}
    assert {"memory_store", "memory_search", "memory_get", "memory_list", "memory_update",
            "memory_delete", "memory_stats"} <= names
