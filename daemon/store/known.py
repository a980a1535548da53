"""The user's workspaces this daemon has served, kept in a small JSON file of the personal
tier's folder, so that a search can name "all of them" (never by default). Written once per
workspace per daemon run, and read back as untrusted: an entry that is no longer a
workspace is skipped when searched."""
import json
import logging
import os
import threading
import time

from ..storage.db_files import open_private

log = logging.getLogger(__name__)

MAX_KNOWN = 500  # the most recently used are kept
MAX_FILE_BYTES = 1 << 20
FILE_NAME = "workspaces.json"


class KnownWorkspaces:
    def __init__(self, folder: str):
        self.path = os.path.join(folder, FILE_NAME) if folder else ""
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def saw(self, workspace: str) -> None:
        """A call used `workspace`: recorded the first time this daemon run sees it."""
        if not self.path or workspace in self._seen:
            return
        with self._lock:
            if workspace in self._seen:
                return
            self._seen.add(workspace)
            entries = self._read()
            entries[workspace] = time.time()
            kept = sorted(entries.items(), key=lambda e: -e[1])[:MAX_KNOWN]
            self._write(dict(kept))

    def all(self) -> list[str]:
        """Every recorded workspace, most recently used first."""
        with self._lock:
            entries = self._read()
        return [w for w, _ in sorted(entries.items(), key=lambda e: -e[1])]

    def _read(self) -> dict[str, float]:
        try:
            fd = open_private(self.path, os.O_RDONLY)
        except OSError:
            return {}
        with os.fdopen(fd, "rb") as f:
            data = f.read(MAX_FILE_BYTES)
        try:
            raw = json.loads(data)
        except ValueError:
            log.warning("%s is not JSON: starting the list of workspaces again", self.path)
            return {}
        if not isinstance(raw, dict):
            return {}
        return {k: float(v) for k, v in raw.items() if isinstance(k, str) and
                os.path.isabs(k) and "\x00" not in k and isinstance(v, (int, float))}

    def _write(self, entries: dict[str, float]) -> None:
        folder = os.path.dirname(self.path)
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entries, f)
            os.replace(temporary, self.path)
        except OSError as exc:  # the list is a convenience: a call never fails for it
            log.warning("cannot record the workspaces in %s: %s", self.path, exc)
