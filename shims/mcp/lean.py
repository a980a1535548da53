"""Imports the MCP SDK's stdio server without the SDK's client side.

Importing any `mcp.x` module first runs mcp/__init__.py, which imports the client (httpx,
cryptography, the HTTP transports), and mcp/server/__init__.py, which imports the high-level
server: ~11 MB of resident memory in every editor window's shim, none of it used here. So the
two packages are entered as bare package modules before the server is imported. The first
time anything asks either of them for an attribute, its real __init__ runs (PEP 562
__getattr__), so code that expects the whole package still gets it.
"""
import importlib.util
import sys
import types


def _bare_package(name: str) -> None:
    if name in sys.modules:
        return  # already imported whole: nothing to save
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    package = types.ModuleType(name)
    package.__spec__ = spec
    package.__path__ = list(spec.submodule_search_locations)
    package.__file__ = spec.origin
    package.__package__ = name

    def complete(attribute: str):
        """Runs the package's real __init__ once, then answers from it."""
        if package.__dict__.pop("__getattr__", None) is None:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}")
        loader = spec.loader
        assert loader is not None  # checked above
        loader.exec_module(package)
        return getattr(package, attribute)

    setattr(package, "__getattr__", complete)
    sys.modules[name] = package
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, package)


def load():
    """The low-level Server and stdio_server, importing as little of the SDK as it can."""
    _bare_package("mcp")
    _bare_package("mcp.server")
    from mcp.server.lowlevel.server import Server
    from mcp.server.stdio import stdio_server

    return Server, stdio_server
