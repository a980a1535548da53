"""Clients of memnestd: the MCP shim, the CLI, and the small library they share.

Nothing here imports the database, the embedding model or numpy: a shim must start fast
and stay small, and only the daemon touches the data.
"""
