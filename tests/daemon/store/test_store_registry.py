"""The registry of open databases: what it does for a long-lived daemon beyond opening and
closing them."""
import gc
import weakref

import pytest

from memnest_daemon.core.errors import ToolError
from memnest_daemon.store.registry import StoreRegistry

from support import some_memories

DIM = 8


def test_open_stores_are_frozen_out_of_full_collections_and_thawed_when_closed(tmp_path):
    """An open store's objects are frozen (the cycle collector's full passes walked ~330k of
    them at 100k memories); closing idle stores thaws and collects, so cycles among what a
    closed store held do not outlive it."""
    registry = StoreRegistry("model", DIM, 64, 1, 1)
    try:
        store = registry.acquire(str(tmp_path), "")
        some_memories(store, list(range(1, 21)), str(tmp_path))
        registry.release(store)
        assert gc.get_freeze_count() > 0
        store.itself = store  # a reference cycle, frozen with the store
        gone = weakref.ref(store)
        del store
        assert registry.close_idle(0) and gone() is None
        assert gc.get_freeze_count() > 0  # what is still alive is frozen again
    finally:
        registry.close_all()


def test_at_most_max_open_databases_the_least_recently_used_idle_one_closes(tmp_path):
    """80 workspaces opened one after another ran the daemon out of memory (~35 MB each)."""
    registry = StoreRegistry("model", DIM, 64, 1, 1, max_open=3)
    folders = []
    for n in range(5):
        folder = tmp_path / f"w{n}"
        folder.mkdir()
        folders.append(str(folder))
    try:
        held = registry.acquire(folders[0], "")  # in use throughout: never closed
        for folder in folders[1:]:
            store = registry.acquire(folder, "")
            some_memories(store, [1], folder)
            registry.release(store)
            assert len(registry.stores()) <= 3
        open_now = {s.db_path for s in registry.stores()}
        assert held.db_path in open_now and len(open_now) == 3
        again = registry.acquire(folders[1], "")
        assert again.catalog  # reopened, its memory still there
        registry.release(again)
        busy = [registry.acquire(f, "") for f in folders[2:4]]
        with pytest.raises(ToolError) as full:
            registry.acquire(folders[4], "")
        assert full.value.code == "resource_exhausted"
        for store in busy:
            registry.release(store)
    finally:
        registry.close_all()
