"""Whether the daemon's process still runs: cheap enough to ask before every message."""
import os
import signal


def process_alive(pid: int) -> bool:
    """The process runs: not gone, not a zombie, not dying of a SIGKILL."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
    except OSError:
        return True  # no /proc (macOS): kill(0) is all there is
    if fields.get("State", "").strip()[:1] in ("Z", "X"):
        return False
    sigkill = 1 << (signal.SIGKILL - 1)
    pending = [int(fields.get(k, "0").strip() or "0", 16) for k in ("SigPnd", "ShdPnd")]
    return not any(p & sigkill for p in pending)
