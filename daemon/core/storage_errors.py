"""What the storage layer raises for the layers above it to catch, in place of an engine's
own errors: each names what went wrong, never which engine said so."""


class ModelMismatch(RuntimeError):
    """The database was embedded with another model than the daemon runs; the message says
    which, and how to run the right one."""
