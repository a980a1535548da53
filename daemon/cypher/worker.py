"""The process memory_query runs in (query_run.py), started on first use and again whenever
a query took it down.

A job holds its database: the daemon closes its own handle first (LadybugDB lets one process
open a file) and opens it again when the job is done, under the store's write lock
throughout, so no other call sees the database closed. The job's time limit is the engine's
(MEMORY_QUERY_TIMEOUT_S); past it and a margin for opening and closing, the process is
killed. A process that dies or is killed took its job's transaction with it: nothing of the
job was committed.
"""
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time

from ..core.errors import ToolError

log = logging.getLogger(__name__)

MARGIN_S = 20.0  # beyond the engine's own time limit: opening, checkpointing, closing


class QueryWorker:
    def __init__(self):
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()  # one job at a time: each holds a whole database

    def run(self, job: dict) -> dict:
        """The job's reply (query_run.run's result); raises ToolError."""
        with self._lock:
            proc = self._process()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps(job) + "\n")
                proc.stdin.flush()
                line = self._reply(proc, job["timeout_s"] + MARGIN_S)
            except (OSError, ValueError):
                line = ""
            if not line:
                self._stop()
                raise ToolError("query_error",
                                "the query took down the process it ran in (most likely it "
                                "needed more memory than memory_query allows, "
                                "MEMNEST_QUERY_MEMORY_MB, or it crashed the engine) and was "
                                "stopped; nothing was changed")
        reply = json.loads(line)
        if "error" in reply:
            raise ToolError(reply["error"]["code"], reply["error"]["message"])
        return reply["ok"]

    def _reply(self, proc: subprocess.Popen, timeout_s: float) -> str:
        assert proc.stdout is not None
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning("memory_query ran %.0f s past its time limit; killing the query "
                            "process (pid %d)", MARGIN_S, proc.pid)
                return ""
            ready, _, _ = select.select([proc.stdout], [], [], min(left, 1.0))
            if ready:
                return proc.stdout.readline()

    def _process(self) -> subprocess.Popen:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "memnest_daemon.cypher.run"], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=None, text=True, encoding="utf-8",
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
            log.info("query process started (pid %d)", self._proc.pid)
        return self._proc

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        code = proc.returncode
        log.warning("the query process (pid %d) ended with %s", proc.pid,
                    f"signal {-code}" if code < 0 else f"status {code}")

    def close(self) -> None:
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None and proc.stdin is not None:
            proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
