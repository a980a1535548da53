"""Versions exchanged between the daemon and its clients."""
import re

VERSION = "0.3.0"
# Bumped only when a change to the wire contract would break an older client or daemon.
PROTOCOL_VERSION = 1


def version_key(version: str) -> tuple[int, ...]:
    """'0.10.2' > '0.9.7'; anything after the numeric release part is ignored."""
    release = re.match(r"[0-9]+(?:\.[0-9]+)*", version.strip())
    return tuple(int(p) for p in release.group(0).split(".")) if release else (0,)
