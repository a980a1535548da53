"""memnest installed from its wheel, not from the checkout: every module imports and the
files it reads at run time (graph page, service templates) are inside the package."""

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Imports every module of the three packages and reads the package data, from wherever
# Python found them; prints where that was.
CHECK = """
import importlib, pkgutil, sys
import memnest_proto, memnest_daemon, memnest_shims
for package in (memnest_proto, memnest_daemon, memnest_shims):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if not module.name.endswith(".__main__"):  # those run the program
            importlib.import_module(module.name)
from memnest_daemon.tools import graph_page
assert "<html" in graph_page.render({"nodes": [], "edges": []}).decode().lower()
print(memnest_daemon.__file__)
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh virtual environment with only the memnest wheel installed; its dependencies
    come from the development environment through a path entry (no network)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # Built from a copy: setuptools builds in the source tree (build/, the egg-info), and the
    # checkout is not the tests' to write (tests/tripwire.py).
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".tools", "site", "build", "*.egg-info", "__pycache__", ".*_cache",
        ".hypothesis", "node_modules", "tests", "bench", "docs", "examples"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(tmp / "dist"), str(source)],
                   check=True, capture_output=True, timeout=240, cwd=tmp)
    wheel = next((tmp / "dist").glob("memnest-*.whl"))
    env_dir = tmp / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True, timeout=240)
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], check=True, capture_output=True, text=True).stdout
    # A plain path entry: the development environment's .pth files (among them the editable
    # install of this checkout) are not processed, so memnest can only come from the wheel.
    (Path(site.strip()) / "dev_dependencies.pth").write_text(
        sysconfig.get_paths()["purelib"] + "\n")
    return env_dir


def run(env_dir: Path, *argv: str, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_RUNTIME_DIR=str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700, exist_ok=True)
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=120, env=env,
                          cwd=tmp_path)


def test_every_module_imports_from_the_wheel(installed, tmp_path):
    out = run(installed, str(installed / "bin" / "python"), "-c", CHECK, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()).is_relative_to(installed)


def test_entry_points_of_the_wheel_run(installed, tmp_path):
    for script in ("memnest-mcp", "memnest-ctl", "memnestd"):
        out = run(installed, str(installed / "bin" / script), "--version", tmp_path=tmp_path)
        assert out.returncode == 0, out.stderr
        assert "0." in out.stdout + out.stderr


def test_service_units_render_from_the_wheel(installed, tmp_path):
    out = run(installed, str(installed / "bin" / "memnest-ctl"), "service", "install",
              "--dry-run", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    if sys.platform == "darwin":
        assert "<key>ProgramArguments</key>" in out.stdout
    else:
        assert "ExecStart=" in out.stdout and "@EXEC_START@" not in out.stdout
        assert str(installed / "bin" / "memnestd") in out.stdout
