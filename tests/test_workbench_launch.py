"""`memnest-ctl ui` opening the person's browser, as it does outside the tests: nothing secret
on a command line. Other local users can read every process's /proc/PID/cmdline; a key there
is theirs to race for (the browser's copy works once, so the winner holds the session and the
person is told the key is invalid). The browser here is real: `BROWSER` names a script that
records what webbrowser gave it and starts Debian's Chromium on it, whose DevTools say where
it landed."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx
import pytest

from support import BIN, CHROMIUM, CHROMIUM_FLAGS

pytestmark = pytest.mark.timeout(600)

# A workbench key as it would sit in an address (token_urlsafe(32): 43 characters).
KEY_IN_ADDRESS = re.compile(rb"key=[A-Za-z0-9_-]{40,}")

# What `webbrowser` starts: records its arguments and what the file it was given looks like,
# then starts Chromium on the same argument, detached, as a desktop's browser would be.
OPENER = textwrap.dedent(f"""\
    #!{sys.executable}
    import json, os, stat, subprocess, sys
    from urllib.parse import unquote, urlsplit
    out = os.environ["MEMNEST_TEST_BROWSER_OUT"]
    given = sys.argv[1:]
    record = {{"argv": given}}
    if given and given[0].startswith("file:"):
        path = unquote(urlsplit(given[0]).path)
        info, folder = os.lstat(path), os.lstat(os.path.dirname(path))
        record.update(path=path, file_mode=stat.S_IMODE(info.st_mode),
                      folder_mode=stat.S_IMODE(folder.st_mode), file_uid=info.st_uid,
                      link=stat.S_ISLNK(info.st_mode))
    with open(os.path.join(out, "opener.json"), "w") as f:
        json.dump(record, f)
    home = os.path.join(out, "home")
    os.makedirs(home, exist_ok=True)
    env = {{k: v for k, v in os.environ.items() if not k.startswith("XDG_")}}
    env["HOME"] = home
    chromium = subprocess.Popen(
        [{CHROMIUM!r}, *{CHROMIUM_FLAGS!r}, "--user-data-dir=" + os.path.join(out, "profile"),
         "--remote-debugging-port=0", *given],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env=env, start_new_session=True)
    with open(os.path.join(out, "chromium.pid"), "w") as f:
        f.write(str(chromium.pid))
""")


def command_lines() -> list[tuple[int, bytes]]:
    """Every process's command line and environment, as a local user (here root) reads them."""
    seen = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{name}/{part}", "rb") as f:
                    seen.append((int(name), f.read()))
            except OSError:
                continue
    return seen


def landed(out: Path) -> dict | None:
    """The page Chromium shows (its DevTools' list), once it is up."""
    try:
        port = (out / "profile" / "DevToolsActivePort").read_text().split()[0]
        pages = httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=5).json()
    except (OSError, IndexError, ValueError, httpx.HTTPError):
        return None
    pages = [p for p in pages if p.get("type") == "page"]
    return pages[0] if pages else None


@pytest.fixture
def launched(daemon, chromium, tmp_path):
    """`memnest-ctl ui` with the browser it opens; what every process's command line held
    meanwhile, sampled until the browser showed the workbench."""
    workspace = (tmp_path / "project").resolve()
    workspace.mkdir()
    client = daemon.client()
    client.call_tool("memory_store", {"content": "The release train leaves on Tuesdays"},
                     str(workspace))
    client.close()
    out = Path(tempfile.mkdtemp(prefix="memnest-browser-"))
    opener = out / "open-browser"
    opener.write_text(OPENER)
    opener.chmod(0o700)
    env = {**daemon.env, "BROWSER": str(opener), "MEMNEST_TEST_BROWSER_OUT": str(out)}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    ui = subprocess.Popen([str(BIN / "memnest-ctl"), "ui", "--workspace", str(workspace)],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    leaks: list[tuple[int, bytes]] = []
    page = None
    try:
        printed = ui.stdout.readline().strip()
        assert printed.startswith("http://127.0.0.1:"), ui.stderr.read()
        base, launch_key = printed.split("?key=")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for pid, held in command_lines():
                if pid != os.getpid() and (KEY_IN_ADDRESS.search(held)
                                           or launch_key.encode() in held):
                    leaks.append((pid, held))
            page = landed(out)
            if page and page["url"].startswith(base.rstrip("/") + "/") and \
                    page["title"].startswith("Memories"):
                break
            time.sleep(0.02)
        yield {"out": out, "base": base.rstrip("/"), "leaks": leaks, "page": page,
               "opener": json.loads((out / "opener.json").read_text())}
    finally:
        pid_file = out / "chromium.pid"
        if pid_file.exists():
            try:
                os.killpg(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
        ui.terminate()
        try:
            ui.wait(timeout=10)
        except subprocess.TimeoutExpired:
            ui.kill()
        shutil.rmtree(out, ignore_errors=True)


def test_the_browsers_key_is_on_no_command_line(launched):
    leaked = sorted({(pid, held.replace(b"\0", b" ")[:300]) for pid, held in launched["leaks"]})
    assert leaked == [], f"a workbench key was on these processes' command lines: {leaked}"
    given = launched["opener"]["argv"]
    assert not any(KEY_IN_ADDRESS.search(a.encode()) for a in given), given


def test_the_browser_it_opens_still_signs_in(launched):
    page = launched["page"]
    assert page is not None and page["title"].startswith("Memories"), page
    assert page["url"].startswith(launched["base"] + "/") and "key=" not in page["url"]


def test_the_file_that_carries_the_key_is_private_and_gone_once_used(launched):
    opener = launched["opener"]
    assert opener["argv"][0].startswith("file:"), opener
    assert opener["file_mode"] == 0o600 and opener["folder_mode"] == 0o700, opener
    assert opener["file_uid"] == os.getuid() and not opener["link"]
    path = unquote(urlsplit(opener["argv"][0]).path)
    deadline = time.monotonic() + 10
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(path), "the opener file outlived its one use"


def test_the_files_folder_is_memnests_own_or_refused(tmp_path, monkeypatch):
    """The folder the browser's file goes in is made 0700 when missing; a planted link or a
    folder others may enter is refused as it is (never chmodded), and nothing is written."""
    from memnest_shims.own_paths import NotOurs
    from memnest_shims.workbench.launch import opener_folder
    run = tmp_path / "run"
    monkeypatch.setenv("MEMNEST_SOCKET", str(run / "memnestd.sock"))
    made = opener_folder()
    assert made == run / "workbench" and (made.stat().st_mode & 0o777) == 0o700
    made.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    made.symlink_to(elsewhere)
    with pytest.raises(NotOurs, match="symbolic link"):
        opener_folder()
    made.unlink()
    made.mkdir(mode=0o755)
    made.chmod(0o755)
    with pytest.raises(NotOurs, match="chmod 700"):
        opener_folder()
    assert (made.stat().st_mode & 0o777) == 0o755 and list(elsewhere.iterdir()) == []
