"""Fixtures that run the real thing (tests/support.py): memnestd on a temp socket with the
offline model, the real memnest-mcp shim, real LadybugDB files."""
import tempfile
from pathlib import Path

import pytest
from support import CHROMIUM, Daemon, TeamSide, git, install_chromium

# The tripwire: the run fails when it changed /etc, the home, the checkout... (tests/tripwire.py)
pytest_plugins = ["tripwire"]


@pytest.fixture(scope="session")
def daemon():
    """One warm daemon shared by the tests that do not kill or restart it."""
    root = Path(tempfile.mkdtemp(prefix="memnest-test-"))
    d = Daemon(root)
    d.start()
    yield d
    d.stop()


@pytest.fixture
def fresh_daemon(tmp_path):
    """A daemon environment of the test's own, not yet started."""
    d = Daemon(tmp_path / "run")
    yield d
    d.stop()


@pytest.fixture
def workspace(tmp_path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def call(daemon, workspace):
    """Call a tool on the shared daemon over gRPC, in this test's workspace."""
    client = daemon.client()

    def _call(tool: str, ws: Path | None = None, **arguments):
        return client.call_tool(tool, arguments, str(ws or workspace))
    yield _call
    client.close()


@pytest.fixture
def team(tmp_path):
    """Two clones (a, b) of one new repository, each with a daemon of its own."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    (seed / "README.md").write_text("project\n")
    git(seed, "add", ".")
    git(seed, "commit", "-qm", "start")
    git(seed, "push", "-q", str(origin), "main")
    a, b = TeamSide(tmp_path, "a", origin), TeamSide(tmp_path, "b", origin)
    yield a, b
    a.stop()
    b.stop()


@pytest.fixture(scope="session")
def chromium():
    """Debian's Chromium (with its chromedriver), installed once per session when missing."""
    why_not = install_chromium()
    if why_not:
        pytest.skip(why_not)
    return CHROMIUM
