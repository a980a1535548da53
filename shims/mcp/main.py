"""memnest-mcp: the stdio MCP server of an editor window, as a pipe to memnestd (pipe.py).

It imports gRPC and the generated messages, nothing of the MCP SDK: the daemon runs the
session. It starts the daemon when the editor first speaks and exits when the editor closes
stdin; the daemon stays for other clients.
"""
import logging
import sys

from memnest_proto.version import VERSION


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="memnest-mcp: %(message)s")
    if len(sys.argv) > 1 and sys.argv[1] in ("--version", "-V"):
        print(f"memnest-mcp {VERSION}")
        return
    from ..client import DaemonClient
    from .pipe import Relay, warn_about_settings

    warn_about_settings()
    client = DaemonClient(client_name="memnest-mcp")
    try:
        Relay(client).run()
    except KeyboardInterrupt:
        pass
    finally:
        client.close()


if __name__ == "__main__":
    main()
