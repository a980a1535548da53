"""What memnest-ctl prints goes to a terminal, and most of it is not memnest's own text:
memories (an agent's, a teammate's shared file), tags, the names and lines of files in a
repository (code anchors, imported notes), the daemon's log and messages. Any of it can carry
terminal controls: ESC sequences (a screen clear, an OSC 52 clipboard write, a title), C1
controls (U+009B is CSI on many terminals), a carriage return or backspaces that print over
a line. So every character the CLI writes passes `shown`, one rule for all of it:

- C0 controls but newline and tab, DEL and the C1 controls (U+0080-U+009F) are shown as
  escapes (`\\x1b`), visible and inert; an ESC sequence is left as the text after its ESC;
- in a field that is one line of a listing (a tag, a file name, a search hit), newline and
  tab are escaped too (`one_line`), so a value cannot forge a line of its own.

`printing_to_terminal` puts `shown` in front of sys.stdout and sys.stderr for a command, so
nothing a command prints escapes it; what the CLI writes as controls of its own (the progress
bar's carriage return) goes to the stream beneath (`beneath`). `--json` output is
`json_text`: JSON escapes C0 controls itself; DEL and C1, which JSON allows raw, are escaped
as \\u00XX, so the text stays exact and the output stays JSON.
"""
import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f]")
_RAW_IN_JSON = re.compile("[\x7f-\x9f]")  # json.dumps escapes the C0 controls already
_NAMED = {"\n": "\\n", "\t": "\\t"}


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def shown(text: str) -> str:
    """`text` with every control but newline and tab shown as an escape."""
    return _CONTROL.sub(_escape, text)


def one_line(value: object) -> str:
    """`value` as text for one line of a listing: every control shown as an escape, newline
    and tab too."""
    return _CONTROL_OR_BREAK.sub(_escape, str(value))


def json_text(value: object) -> str:
    """`value` as indented JSON with no raw control character in it."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return _RAW_IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


class Shown(io.TextIOBase):
    """A text stream that writes what it is given through `shown` to the stream beneath."""

    def __init__(self, beneath: TextIO) -> None:
        self.beneath = beneath

    def write(self, text: str) -> int:
        self.beneath.write(shown(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:  # type: ignore[override]
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.beneath.flush()

    def isatty(self) -> bool:
        return self.beneath.isatty()

    def fileno(self) -> int:
        return self.beneath.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.beneath, "encoding", "utf-8"))

    @property
    def errors(self) -> Any:  # type: ignore[override]
        return getattr(self.beneath, "errors", None)


def beneath(stream: TextIO) -> TextIO:
    """The stream under `stream` when it is a Shown one: for controls the CLI writes itself."""
    return stream.beneath if isinstance(stream, Shown) else stream


@contextmanager
def printing_to_terminal() -> Iterator[None]:
    """sys.stdout and sys.stderr through `shown` while the block runs."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Shown(out), Shown(err)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err
