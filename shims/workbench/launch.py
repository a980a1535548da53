"""Serve the workbench: a socket on loopback (a free port unless one is asked), the address
with its key as the first line of output, the browser opened on a key of its own.

Nothing secret goes on a command line, which every local user can read (/proc/PID/cmdline):
the browser is opened on a file, 0600 in a folder of memnest's that is 0700 (`workbench/`
beside the daemon's socket), whose page carries the browser's key and moves on to the
workbench by itself. The file is removed once the key is used, or when the workbench stops."""
import html
import json
import socket
import sys
import webbrowser
from pathlib import Path
from typing import TextIO

import uvicorn

from ..client import DaemonClient
from ..own_paths import PRIVATE, NotOurs, own_folder, write_file
from .app import build
from .daemon_link import CLIENT_NAME, DaemonLink
from .guard import LAUNCH_PARAMETER, Keys

HOST = "127.0.0.1"


def listening_socket(port: int) -> socket.socket:
    """Bound to loopback only; port 0 lets the system pick a free one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Inherited by every accepted connection: without it, a kept-alive connection's answer
    # waits on the browser's delayed ACK (bench/RESULTS.md, Workbench).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((HOST, port))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


def serve(workspace: str, db_path: str = "", port: int = 0, open_browser: bool = True,
          as_json: bool = False, out: TextIO = sys.stdout) -> None:
    client = DaemonClient(client_name=CLIENT_NAME)
    client.ensure_running()
    sock = listening_socket(port)
    bound = sock.getsockname()[1]
    keys = Keys()
    base = f"http://{HOST}:{bound}/"
    address = f"{base}?{LAUNCH_PARAMETER}={keys.launch}"
    if as_json:
        print(json.dumps({"url": address, "workspace": workspace, "port": bound}), file=out,
              flush=True)
    else:
        print(address, file=out, flush=True)
        print(f"memnest workbench for {workspace}; Ctrl-C stops it", file=out, flush=True)
    opener: Path | None = None
    try:
        if open_browser:
            opener = _open_browser(keys, f"{base}?{LAUNCH_PARAMETER}={keys.opener}", bound)
        app = build(DaemonLink(client, workspace, db_path), keys, bound)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                server_header=False, date_header=False)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        if opener is not None:
            opener.unlink(missing_ok=True)
        client.close()


def opener_folder() -> Path:
    """Where the browser's file is written: workbench/ in the daemon's socket folder, both
    memnest's own (a real folder of this user, 0700; made so when missing)."""
    from memnest_proto import paths
    socket_folder = paths.socket_path().parent
    own_folder(socket_folder, PRIVATE)
    folder = socket_folder / "workbench"
    own_folder(folder, PRIVATE)
    return folder


def _open_browser(keys: Keys, address: str, port: int) -> Path | None:
    """Open the browser on a private file that sends it to `address`; the file, removed once
    its key is used. On any failure the person is told to open the printed address."""
    try:
        page = opener_folder() / f"open-{port}.html"
        shown = html.escape(address, quote=True)
        write_file(page, (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="refresh" content="0;url={shown}">'
            '<title>memnest workbench</title></head>\n'
            f'<body><p>Opening the <a href="{shown}">memnest workbench</a>.</p></body></html>\n'
        ).encode(), mode=0o600)
    except NotOurs as exc:
        print(f"memnest-ctl: not opening a browser: {exc}; open the address above",
              file=sys.stderr, flush=True)
        return None
    keys.spent = lambda: page.unlink(missing_ok=True)
    if not webbrowser.open(page.as_uri()):
        page.unlink(missing_ok=True)
        print("memnest-ctl: no browser found here; open the address above", file=sys.stderr,
              flush=True)
        return None
    return page
