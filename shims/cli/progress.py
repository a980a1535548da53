"""Progress of a long daemon call, for a person at a terminal or for a log: a bar that redraws
in place on a TTY, plain lines otherwise. The bar's own controls go to the stream beneath
terminal.Shown; the label and the daemon's message pass one_line."""
import sys
from typing import TextIO

from .terminal import beneath, one_line


class Progress:
    """Called with (done, total, message) as the daemon reports; finish() ends the bar."""
    WIDTH = 30

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = one_line(label)
        self.stream = beneath(stream or sys.stderr)
        self.tty = self.stream.isatty()
        self._drawn = False

    def __call__(self, done: float, total: float, message: str) -> None:
        message = one_line(message)
        if self.tty:
            filled = int(self.WIDTH * done / total) if total else 0
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            self.stream.write(f"\r{self.label} [{bar}] {done:.0f}/{total:.0f} {message}\033[K")
            self._drawn = True
        else:
            of = f"/{total:.0f}" if total else ""
            self.stream.write(f"{self.label}: {done:.0f}{of} {message}\n")
        self.stream.flush()

    def finish(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
