"""Serve the workbench: a socket on loopback (a free port unless one is asked), the address
with its key as the first line of output, the browser opened on a key of its own."""
import json
import socket
import sys
import webbrowser
from typing import TextIO

import uvicorn

from ..client import DaemonClient
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
    if open_browser and not webbrowser.open(f"{base}?{LAUNCH_PARAMETER}={keys.opener}"):
        print("memnest-ctl: no browser found here; open the address above", file=sys.stderr,
              flush=True)
    app = build(DaemonLink(client, workspace, db_path), keys, bound)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            server_header=False, date_header=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        client.close()
