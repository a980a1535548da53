"""memnest-mcp: the stdio MCP server of an editor window, as a pipe to memnestd (pipe.py).

Nothing of the MCP SDK is imported, nor grpcio for a local daemon (transports.py): the
daemon runs the session. It starts the daemon when the editor first speaks and exits when
the editor closes stdin; the daemon stays for other clients.
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
    from .. import workspace as ws
    from .pipe import Relay, warn_about_settings
    from .transports import LocalTransport, RemoteTransport

    warn_about_settings()
    transport = RemoteTransport() if ws.remote() else LocalTransport()
    try:
        Relay(transport).run()
    except KeyboardInterrupt:
        pass
    finally:
        close = getattr(transport, "close", None)
        if close is not None:
            close()


if __name__ == "__main__":
    main()
