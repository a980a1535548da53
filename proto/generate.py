"""Regenerate the gRPC Python code from memnest.proto.

The proto is compiled as if it lived at memnest_proto/memnest.proto, so the generated
modules import each other as `memnest_proto.memnest_pb2` (the installed package name).
Usage: python proto/generate.py [OUTDIR]   (default: this folder)
"""
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
GENERATED = ("memnest_pb2.py", "memnest_pb2.pyi", "memnest_pb2_grpc.py")


def generate(outdir: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main([
            "grpc_tools.protoc",
            f"-Imemnest_proto={HERE}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            str(HERE / "memnest.proto"),
        ])
        if rc != 0:
            raise SystemExit(f"protoc failed with exit code {rc}")
        outdir.mkdir(parents=True, exist_ok=True)
        for name in GENERATED:
            shutil.copyfile(Path(tmp) / "memnest_proto" / name, outdir / name)


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
