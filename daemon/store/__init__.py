"""One open database with everything derived from it (MemoryStore), the registry
of open stores, the graph mirror, the conflict neighbours and verify."""
