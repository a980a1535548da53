"""The daemon's background chores, on one thread: save access counts and deferred embeddings
every few seconds, dream for idle workspaces (upkeep.py), find conflict neighbour rows in idle
databases (conflicts.fill_rows), and close databases nobody has used for a while so a
long-lived daemon that has seen many projects holds only the ones in use."""
import logging
import threading
import time

from ..curation.conflicts import fill_rows

log = logging.getLogger(__name__)

TICK_SECONDS = 5.0


def start_housekeeping(stores, upkeep, idle_close_seconds: float,
                       neighbour_floor: float) -> threading.Thread:
    """`neighbour_floor`: the similarity conflict neighbours are found down to."""
    tick = TICK_SECONDS
    if idle_close_seconds > 0:
        tick = min(tick, max(0.5, idle_close_seconds / 4))
    if upkeep.enabled:
        tick = min(tick, max(0.5, upkeep.settings.upkeep_idle_minutes * 60 / 4))

    def fill_neighbours():
        stores.fill_neighbours(fill_rows, neighbour_floor)

    def loop():
        last_sweep = time.monotonic()
        while True:
            time.sleep(tick)
            for chore in (stores.flush_deferred, upkeep.run_due, fill_neighbours):
                try:
                    chore()
                except Exception:
                    log.exception("housekeeping: %s failed", chore.__name__)
            if idle_close_seconds > 0 and \
                    time.monotonic() - last_sweep >= min(60.0, idle_close_seconds / 4):
                last_sweep = time.monotonic()
                try:
                    stores.close_idle(idle_close_seconds)
                except Exception:
                    log.exception("housekeeping: closing idle databases failed")

    thread = threading.Thread(target=loop, name="housekeeping", daemon=True)
    thread.start()
    return thread
