"""Following: sources a workspace keeps in step with (memory_import with `follow`). The
list is kept in the database (Meta), never in a file of the workspace, which may be
hostile; what each followed source's files looked like after its last import is kept by
the open store. At the start of a call (at most every FOLLOW_CHECK_S per workspace) a few
stat calls compare them, and a source whose files changed is imported again."""
from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass

from ..core import sealing
from ..core.errors import invalid
from ..store.changes import Changes
from ..store.store import MemoryStore
from .adopting import Adopted, SourceAsk, adopt
from .context import CallContext

FOLLOWED = "followed_sources"  # Meta key: JSON {workspace: [{"from": kind, "path": ...}]}
FOLLOWED_SEAL = "followed_sources_seal"  # Meta key: the user's seal of FOLLOWED's value
FOLLOW_CHECK_S = 2.0  # a workspace's followed sources are looked at this often, at most
MAX_FOLLOWED = 20  # sources one workspace follows
_CHECKED = "checked"  # the store's `followed` key of when each workspace was looked at

log = logging.getLogger(__name__)
Fingerprint = tuple[tuple[str, int, int, int], ...]  # (path, size or -1, mtime, inode)


@dataclass(frozen=True)
class Followed:
    kind: str
    path: str | None

    @property
    def key(self) -> str:
        return f"{self.kind}\0{self.path or ''}"

    def view(self) -> dict[str, str | None]:
        return {"from": self.kind, "path": self.path}


def followed(store: MemoryStore, workspace: str) -> list[Followed]:
    entries = recorded(store).get(workspace, [])
    return [Followed(str(e["from"]), e.get("path")) for e in entries if e.get("from")]


def set_followed(ctx: CallContext, source: Followed, on: bool, done: Adopted | None) -> None:
    """Follow `source` (its files as `done` read them), or stop following it."""
    store = ctx.store
    with store.writing():
        every = recorded(store)
        now = [f for f in followed(store, ctx.workspace) if f != source]
        if on:
            if len(now) >= MAX_FOLLOWED:
                raise invalid(f"this workspace already follows {MAX_FOLLOWED} sources; stop "
                              "following one (follow: false) first")
            now.append(source)
        every[ctx.workspace] = [f.view() for f in now]
        if not every[ctx.workspace]:
            del every[ctx.workspace]
        store.commit(Changes(meta=sealed_record(every)))
    if on and done is not None:
        store.followed[_state_key(ctx.workspace, source)] = seen_files(done)
    else:
        store.followed.pop(_state_key(ctx.workspace, source), None)


def keep_in_step(ctx: CallContext) -> list[Adopted]:
    """At the start of a call: import again each followed source whose files changed since
    its last import. A failure is logged, never the call's failure."""
    store = ctx.store
    checked = store.followed.setdefault(_CHECKED, {})
    assert isinstance(checked, dict)
    now = time.monotonic()
    if now - checked.get(ctx.workspace, -FOLLOW_CHECK_S) < FOLLOW_CHECK_S:
        return []
    checked[ctx.workspace] = now
    out = []
    for source in followed(store, ctx.workspace):
        key = _state_key(ctx.workspace, source)
        seen = store.followed.get(key)
        if seen is not None and _still(seen):
            continue
        try:
            done = adopt(ctx, SourceAsk(source.kind, source.path))
        except Exception:  # noqa: BLE001 - the call goes on with what the store holds
            log.exception("keeping %s in step with %s failed", ctx.workspace, source.kind)
            store.followed[key] = ()  # not again until its files change
            continue
        store.followed[key] = seen_files(done)
        if done.stored or done.count("update") or done.removed:
            log.info("%s: %s changed; %d stored, %d updated, %d gone from their files",
                     ctx.workspace, source.kind, len(done.stored), done.count("update"),
                     len(done.removed))
        out.append(done)
    return out


def seen_files(done: Adopted) -> Fingerprint:
    """What the import read and where it looked: each file's and each of their folders'
    identity, so an edit, a new file or a removed one shows."""
    paths = {f.absolute for f in done.found.files} | set(done.found.looked_in)
    paths |= {os.path.dirname(p) for p in paths}
    return tuple(_stat(p) for p in sorted(paths))


def _still(seen: object) -> bool:
    return isinstance(seen, tuple) and all(_stat(p) == (p, *rest) for p, *rest in seen)


def _stat(path: str) -> tuple[str, int, int, int]:
    try:
        st = os.stat(path, follow_symlinks=False)
        return (path, st.st_size, st.st_mtime_ns, st.st_ino)
    except (OSError, ValueError):
        return (path, -1, 0, 0)


def recorded(store: MemoryStore) -> dict[str, list[dict[str, str | None]]]:
    """The followed sources of every workspace of the database, by workspace (Meta), when
    this user's memnest wrote them (sealed): a database a stranger committed to a repository
    could otherwise name the user's own files (`~/notes`) to import into it."""
    value = store.meta(FOLLOWED)
    if not value:
        return {}
    if not sealing.sealed(store.meta(FOLLOWED_SEAL), FOLLOWED, value.encode()):
        log.warning("%s: its followed sources were not written by this user's memnest (a "
                    "database from elsewhere?); none is followed. memory_import with follow "
                    "follows a source again", store.db_path)
        return {}
    try:
        found = json.loads(value)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def sealed_record(every: dict[str, list[dict[str, str | None]]]) -> dict[str, str]:
    """The Meta entries that record `every` workspace's followed sources, sealed."""
    value = json.dumps(every, sort_keys=True)
    return {FOLLOWED: value, FOLLOWED_SEAL: sealing.seal(FOLLOWED, value.encode())}


def _state_key(workspace: str, source: Followed) -> str:
    return f"{workspace}\0{source.key}"
