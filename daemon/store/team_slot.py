"""The slot of an open store that team memory fills: the store layer sits below team and
cannot name its state (daemon/team/state.py), only what the registry does with it."""
from typing import Protocol


class TeamSlot(Protocol):
    """Team memory's state for one open store, made by the registry as the store opens."""

    def close(self) -> None:
        """The store closes: stop following its commits and forget what was seen."""
