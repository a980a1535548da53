"""The client's errors, apart from client.py so that catching them does not import gRPC."""
from dataclasses import dataclass


class DaemonUnavailable(RuntimeError):
    """The daemon could not be reached or started; the message says why and what to do."""


class OutcomeUnknown(DaemonUnavailable):
    """The daemon stopped while it was running the call: it may or may not have taken
    effect, and it is not repeated (it may be what stopped the daemon)."""


@dataclass
class ToolFailure(Exception):
    code: str
    message: str

    def __str__(self) -> str:
        return self.message
