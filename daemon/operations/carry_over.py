"""What a workspace keeps in its database beside its memories (the review queue's marks,
the dream schedule and last report, the sources it follows), keyed by its path: a workspace
moved or copied to a new path (store/relocation.py) takes it along, in one commit."""
from __future__ import annotations

from ..curation.dream import state_keys
from ..store.changes import Changes
from ..store.store import MemoryStore
from .following import recorded, sealed_record
from .review import review_key


def carry_over(store: MemoryStore, old: list[str], new: str) -> int:
    """The state of the `old` paths, now `new`'s (what `new` already has is kept). Returns
    how many entries came along."""
    meta: dict[str, str] = {}
    for path in old:
        for was, now in [(review_key(path), review_key(new)),
                         *zip(state_keys(path), state_keys(new))]:
            value = store.meta(was)
            if value is not None and store.meta(now) is None and now not in meta:
                meta[now] = value
    followed = recorded(store)
    taken = [p for p in old if p in followed and new not in followed]
    if taken:
        followed[new] = followed[taken[0]]
        meta.update(sealed_record(followed))
    if meta:
        with store.writing():
            store.commit(Changes(meta=meta))
    return len(meta)

