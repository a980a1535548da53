"""Proof that data was written by this user's memnest: an HMAC under a key only the user's
daemon holds (kept in memnest's own folder, storage/user_key.py).

A workspace may come from a stranger, and so may a database or a snapshot in its
`.memnest/`. What memnest reads from such files to decide something that reaches outside the
workspace (the sources a workspace follows) or that decides safety (screening verdicts) is
trusted only with a valid seal; a planted file cannot carry one. Until the daemon sets its
key (unit tests, tools run in a process of their own), a random key of this process seals
and checks.
"""
import hashlib
import hmac
import secrets

KEY_BYTES = 32
_key = secrets.token_bytes(KEY_BYTES)


def set_key(key: bytes) -> None:
    global _key
    if len(key) < KEY_BYTES:
        raise ValueError("a sealing key has at least 32 bytes")
    _key = key


def seal(purpose: str, *parts: bytes) -> str:
    """The seal of `parts` for `purpose` (a seal made for one purpose proves nothing for
    another)."""
    mac = hmac.new(_key, purpose.encode() + b"\0", hashlib.sha256)
    for part in parts:
        mac.update(len(part).to_bytes(8, "big"))
        mac.update(part)
    return mac.hexdigest()


def sealed(tag: object, purpose: str, *parts: bytes) -> bool:
    """`tag` is this daemon's seal of `parts` for `purpose`."""
    return isinstance(tag, str) and hmac.compare_digest(tag, seal(purpose, *parts))
