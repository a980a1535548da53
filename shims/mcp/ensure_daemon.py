"""Start memnestd, or upgrade an older one, for a memnest-mcp that has no gRPC client of its
own (transports.LocalTransport). Prints one JSON line: the daemon's version and pid, or the
error; the client's log lines (an upgrade, a start) go to stderr, the editor's MCP log.

Usage: python -m memnest_shims.mcp.ensure_daemon SOCKET
"""
import json
import logging
import sys
from pathlib import Path

from ..client import DaemonClient
from ..errors import DaemonUnavailable


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="memnest-mcp: %(message)s")
    client = DaemonClient(Path(sys.argv[1]), client_name="memnest-mcp")
    try:
        client.ensure_running()
        print(json.dumps({"version": client.daemon_version, "pid": client.accepted_pid}))
        return 0
    except DaemonUnavailable as exc:
        print(json.dumps({"error": str(exc)}))
        return 1
    finally:
        client.close()


if __name__ == "__main__":
    sys.exit(main())
