"""memnest-mcp: a stdio MCP server that forwards every tool call to memnestd.

Importing the MCP SDK is most of the start-up, so main() first starts a thread that imports
the gRPC client and fetches the tools of a daemon already running, then imports the server
(mcp_server) while that thread works. Starting or upgrading a daemon is left to the first
call, as before.
"""
import logging
import sys
import threading

from memnest_proto.version import VERSION


class Warmup(threading.Thread):
    """Loads the daemon client off the main thread; the client is used only once it is done."""

    def __init__(self):
        super().__init__(name="memnest-warmup", daemon=True)
        self._client = None
        self._error: BaseException | None = None
        self._tools = None  # (daemon pid, tool definitions) when a daemon already ran

    def run(self) -> None:
        try:
            from ..client import DaemonClient  # gRPC and protobuf: the shim's own import cost

            self._client = DaemonClient(client_name="memnest-mcp")
            self._tools = self._client.tools_if_running()
        except BaseException as exc:  # raised again where the client is needed
            self._error = exc

    def client(self):
        self.join()
        if self._error is not None:
            raise self._error
        return self._client

    def take_tools(self):
        """The tools fetched at start, once: later lists come from the daemon."""
        self.join()
        tools, self._tools = self._tools, None
        return tools

    def close(self) -> None:
        self.join()
        if self._client is not None:
            self._client.close()


def main() -> None:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="memnest-mcp: %(message)s")
    if len(sys.argv) > 1 and sys.argv[1] in ("--version", "-V"):
        print(f"memnest-mcp {VERSION}")
        return
    warmup = Warmup()
    warmup.start()
    from .server import run  # the MCP SDK, imported while the warm-up connects

    run(warmup)


if __name__ == "__main__":
    main()
