"""The tripwire (issue 54): a test run leaves the machine as it found it.

The suite runs as root on shared machines, and a test that chmods or chowns the wrong path
(a bug once took /etc to 0700 and /etc/passwd to 0600) breaks every user of the machine,
not only the run. This plugin (registered in tests/conftest.py) records, when the session
starts, what such a test could damage, records it again when the session ends, and fails
the run (exit status 1) with a report of each difference (path: what: before -> after):

  /etc          mode, owner, group, mtime; each entry's name and lstat mode, uid and gid
  /etc/passwd   mode, owner, mtime
  /tmp          mode and owner only (every process on the machine adds entries to it)
  the home      mode, owner; each entry's name and lstat mode, uid and gid
  the checkout  mode, owner; each entry's name and lstat mode, uid and gid
  ../shared     mode, owner, mtime; each entry's name and lstat mode, uid and gid (when the
                checkout has a sibling of that name)
  memnest's own folders of the user running the tests (platformdirs: the data folder with
                the personal tier, the state folder with the logs and hooks.log, the config
                folder with the TLS files, the runtime folder with the default socket):
                whether each exists, and every file and folder under it with its mode and
                owners, and a file's size and mtime. A test's daemon, hook or CLI uses the
                test's own folders (support.Daemon's env), never these.

An entry's mode and owners are compared whenever it exists before and after. Only the
appearing or disappearing of the names below is let pass, each a cache a tool keeps:

  in the checkout
    .pytest_cache  pytest's cache provider (last failures, the --lf/--ff state), written at
                   the rootdir by every run without `-p no:cacheprovider`
    .hypothesis    Hypothesis's example database, written in the working directory by the
                   @given tests (test_code_anchors.py, ...) and replayed by later runs
    __pycache__    Python's bytecode of a module imported from the root (none is there
                   today; a script put there and imported by a test would leave one)
  in the home
    .cache         the XDG cache folder, on a machine that had none: onnxruntime writes a
                   telemetry device id under .cache/Microsoft whenever a process loads the
                   embedding model (every test daemon), and memnest keeps its copy of the
                   offline model under .cache/memnest/models (paths.cache_dir) for the
                   embedders tests run in process; caches both, reused by the next run

Seen in a real run and not let pass: apt-get installing Chromium for the browser tests
(support.install_chromium, when it is missing) adds users to /etc/passwd and files to /etc
(`make test` installs it before pytest starts); `pip wheel` of the checkout left a build/
folder in it (test_packaging.py builds a copy); daemons started on demand and a hook run
without the test's env wrote the real user's personal tier and hooks.log (they get the
test's MEMNEST_USER_DIR and env now).

With pytest-xdist only the controller records and compares (workers skip): one report for
the whole run, the first record taken before any worker starts, the second after all ended.
"""
from __future__ import annotations

import os
import stat
import sys
import warnings
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent

# Names whose appearing or disappearing is let pass (the module's docstring says why).
TOOL_CACHES = {
    "checkout": frozenset({".pytest_cache", ".hypothesis", "__pycache__"}),
    "home": frozenset({".cache"}),
}
MAX_TREE = 5000  # entries listed under one of memnest's folders

Facts = dict[str, object]
# a label -> the path, the facts kept of the path itself, how its entries are listed ("": not,
# "names": its own, "tree": all under it), and the TOOL_CACHES key of the names let pass
Places = dict[str, tuple[Path, tuple[str, ...], str, str]]


def _node(path: Path) -> Facts | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return {"mode": stat.filemode(st.st_mode), "owner": f"uid {st.st_uid}",
            "group": f"gid {st.st_gid}", "mtime": st.st_mtime_ns}


def _entries(path: Path) -> dict[str, str]:
    """Each entry's name: its lstat mode and uid:gid."""
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        return {"(unreadable)": f"{type(exc).__name__}: {exc}"}
    found = {}
    for name in names:
        try:
            st = os.lstat(path / name)
        except FileNotFoundError:
            continue  # gone between the listing and the look
        found[name] = f"{stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid}"
    return found


def _tree(path: Path) -> dict[str, str]:
    """Every file and folder under `path`: lstat mode, uid:gid, and a file's size and
    mtime."""
    found: dict[str, str] = {}
    for folder, dirs, files in os.walk(path):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            full = Path(folder) / name
            try:
                st = os.lstat(full)
            except FileNotFoundError:
                continue
            what = f"{stat.filemode(st.st_mode)} {st.st_uid}:{st.st_gid}"
            if not stat.S_ISDIR(st.st_mode):
                what += f" {st.st_size} bytes mtime {st.st_mtime_ns}"
            found[str(full.relative_to(path))] = what
            if len(found) >= MAX_TREE:
                found["(more)"] = f"listing stopped at {MAX_TREE} entries"
                return found
    return found


def _record(path: Path, facts: tuple[str, ...], listing: str) -> Facts | None:
    node = _node(path)
    if node is None:
        return None
    kept: Facts = {k: node[k] for k in facts}
    if listing and str(node["mode"]).startswith("d"):
        kept["entries"] = _tree(path) if listing == "tree" else _entries(path)
    return kept


def memnest_folders() -> dict[str, Path]:
    """memnest's default folders for the user running the tests, as the daemon and the CLI
    find them when no variable points elsewhere."""
    import platformdirs
    with warnings.catch_warnings():  # no XDG_RUNTIME_DIR: platformdirs falls back, noisily
        warnings.simplefilter("ignore")
        return {"data": Path(platformdirs.user_data_dir("memnest")),
                "state": Path(platformdirs.user_state_dir("memnest")),
                "config": Path(platformdirs.user_config_dir("memnest")),
                "runtime": Path(platformdirs.user_runtime_dir("memnest"))}


def watched() -> Places:
    home = Path(os.path.expanduser("~"))
    places: Places = {
        "/etc": (Path("/etc"), ("mode", "owner", "group", "mtime"), "names", ""),
        "/etc/passwd": (Path("/etc/passwd"), ("mode", "owner", "mtime"), "", ""),
        "/tmp": (Path("/tmp"), ("mode", "owner"), "", ""),
        "home": (home, ("mode", "owner"), "names", "home"),
        "checkout": (CHECKOUT, ("mode", "owner"), "names", "checkout"),
    }
    shared = CHECKOUT.parent / "shared"
    if shared.exists():
        places["shared"] = (shared, ("mode", "owner", "mtime"), "names", "")
    for kind, folder in memnest_folders().items():
        places[f"memnest {kind}"] = (folder, ("mode", "owner"), "tree", "")
    return places


def snapshot(places: Places) -> dict[str, Facts | None]:
    return {label: _record(path, facts, listing)
            for label, (path, facts, listing, _) in places.items()}


def differences(places: Places, before: dict[str, Facts | None],
                after: dict[str, Facts | None]) -> list[str]:
    """One line per change: `path: what: before -> after`."""
    lines = []
    for label, (path, _, listing, caches) in places.items():
        was, now = before.get(label), after.get(label)
        if was is None or now is None:
            if was is not None or now is not None:
                lines.append(f"{path}: appeared" if was is None else f"{path}: disappeared")
            continue
        for key, value in was.items():
            if key != "entries" and value != now.get(key):
                lines.append(f"{path}: {key}: {value} -> {now.get(key)}")
        old, new = was.get("entries", {}), now.get("entries", {})
        assert isinstance(old, dict) and isinstance(new, dict)
        allowed = TOOL_CACHES.get(caches, frozenset())
        what = "mode uid:gid" if listing == "names" else "mode uid:gid [size mtime]"
        for name in sorted(old.keys() | new.keys()):
            if name in old and name in new:
                if old[name] != new[name]:
                    lines.append(f"{path / name}: {what}: {old[name]} -> {new[name]}")
            elif name not in allowed:
                lines.append(f"{path / name}: appeared ({new[name]})" if name in new
                             else f"{path / name}: disappeared (was {old[name]})")
    return lines


def report(changes: list[str]) -> str:
    return ("These changed between the session's start and its end (tests/tripwire.py); "
            "put them back, and find and fix the test that changed them:\n"
            + "\n".join(f"  {line}" for line in changes))


_PLACES = pytest.StashKey[Places]()
_BEFORE = pytest.StashKey[dict]()
_CHANGES = pytest.StashKey[list]()


def _controller(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # an xdist worker has it


def pytest_sessionstart(session: pytest.Session) -> None:
    if not _controller(session.config):
        return
    places = watched()
    session.config.stash[_PLACES] = places
    session.config.stash[_BEFORE] = snapshot(places)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not _controller(config) or _BEFORE not in config.stash:
        return
    places = config.stash[_PLACES]
    changes = differences(places, config.stash[_BEFORE], snapshot(places))
    config.stash[_CHANGES] = changes
    if not changes:
        return
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if config.pluginmanager.get_plugin("terminalreporter") is None:  # -p no:terminal
        print(f"TRIPWIRE: the test run changed the machine. {report(changes)}", file=sys.stderr)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    changes = config.stash.get(_CHANGES, [])
    if changes:
        terminalreporter.section("TRIPWIRE: the test run changed the machine", red=True,
                                 bold=True)
        terminalreporter.line(report(changes), red=True)
