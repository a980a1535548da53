"""Versions exchanged between the daemon and its clients."""

VERSION = "0.2.0"
# Bumped only when a change to the wire contract would break an older client or daemon.
PROTOCOL_VERSION = 1
