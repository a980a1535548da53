"""The registry of open databases: what it does for a long-lived daemon beyond opening and
closing them."""
import gc
import weakref

from memnest_daemon.workspace import StoreRegistry

from test_conflict_cache import DIM, _write


def test_open_stores_are_frozen_out_of_full_collections_and_thawed_when_closed(tmp_path):
    """An open store's objects are frozen (the cycle collector's full passes walked ~330k of
    them at 100k memories); closing idle stores thaws and collects, so cycles among what a
    closed store held do not outlive it."""
    registry = StoreRegistry("model", DIM, 64, 1, 1)
    try:
        store = registry.acquire(str(tmp_path), "")
        _write(store, list(range(1, 21)), str(tmp_path))
        registry.release(store)
        assert gc.get_freeze_count() > 0
        store.itself = store  # a reference cycle, frozen with the store
        gone = weakref.ref(store)
        del store
        assert registry.close_idle(0) and gone() is None
        assert gc.get_freeze_count() > 0  # what is still alive is frozen again
    finally:
        registry.close_all()
