"""What the storage layer raises for the layers above it to catch, in place of an engine's
own errors: each names what went wrong, never which engine said so."""


class ModelMismatch(RuntimeError):
    """The database was embedded with another model than the daemon runs; the message says
    which, and how to run the right one."""


# What the system says when the disk, not the call, is at fault, and what to tell the caller.
DISK_REASONS = {"No space left on device": "the disk is full",
                "Disk quota exceeded": "the disk quota is exhausted",
                "Read-only file system": "the file system is read-only",
                "Permission denied": "the database folder is not writable"}


class DiskFailure(RuntimeError):
    """The disk refused a write: full, over quota, read-only or not writable. The storage
    layer raises it in place of the engine's error, whose message it keeps; `strerror` is
    what the system called the failure (a key of DISK_REASONS)."""

    def __init__(self, strerror: str, message: str) -> None:
        super().__init__(message)
        self.strerror = strerror


def disk_trouble(text: str) -> str | None:
    """The key of DISK_REASONS that an error's text names, if any."""
    return next((needle for needle in DISK_REASONS if needle in text), None)
