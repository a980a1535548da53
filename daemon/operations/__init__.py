"""Memory operations: one typed function per thing a caller can do to memory (remember,
recall, revise, forget, import, share ...), below the tools that read arguments and shape
JSON, above the store, curation and team layers they combine. Each takes a CallContext
(context.py) and returns dataclasses; the tools turn those into JSON."""
