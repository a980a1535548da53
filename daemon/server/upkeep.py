"""Scheduled upkeep: the daemon dreams for a workspace on its own once the workspace has been
idle for MEMNEST_UPKEEP_IDLE_MINUTES and the dream gates allow it. Dreams plan without locks
and apply in short transactions (see dream.py), so a user call arriving meanwhile waits at
most for one small write."""
import logging
import time

from ..curation.dream import DreamReport, dream

log = logging.getLogger(__name__)


class Upkeep:
    def __init__(self, stores, embedder, settings):
        self.stores, self.embedder, self.settings = stores, embedder, settings.dream
        self._checked: dict[str, float] = {}  # workspace -> when its gates were last checked

    @property
    def enabled(self) -> bool:
        return self.settings.upkeep_idle_minutes > 0

    def run_due(self) -> list[DreamReport]:
        """Dream every open workspace that is idle and due. Returns the reports."""
        if not self.enabled:
            return []
        idle_s = self.settings.upkeep_idle_minutes * 60
        reports = []
        for workspace in sorted(self.stores.workspaces):
            now = time.monotonic()
            if now - self._checked.get(workspace, 0.0) < idle_s:
                continue
            store = self.stores.hold_open(workspace)
            if store is None:
                continue
            try:
                if now - store.last_used < idle_s:
                    continue
                self._checked[workspace] = now
                log.info("upkeep: %s has been idle %.0f s; dreaming if its gates allow",
                         workspace, now - store.last_used)
                report = dream(store, workspace, self.embedder, self.settings)
                if report["status"] == "done":
                    log.info("upkeep dream for %s: merged %d, pruned %d, re-embedded %d, "
                             "%d clusters to review, %.0f ms", workspace, len(report["merged"]),
                             len(report["pruned"]), report["reembedded"],
                             len(report["clusters"]), report["duration_ms"])
                reports.append(report)
            except Exception:
                log.exception("upkeep dream for %s failed", workspace)
            finally:
                self.stores.release(store, used=False)
        return reports
