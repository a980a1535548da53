"""The client's errors, apart from client.py so that catching them does not import gRPC."""
from dataclasses import dataclass


class DaemonUnavailable(RuntimeError):
    """The daemon could not be reached or started; the message says why and what to do."""


@dataclass
class ToolFailure(Exception):
    code: str
    message: str

    def __str__(self) -> str:
        return self.message
