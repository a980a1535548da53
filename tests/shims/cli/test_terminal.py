"""terminal.py, the one rule for what memnest-ctl prints: controls shown as escapes, text
kept; JSON kept exact; the progress bar's own controls written beneath the rule."""
import io
import json

from memnest_shims.cli import terminal
from memnest_shims.cli.progress import Progress

EVERY_CONTROL = "".join(map(chr, [*range(0x20), 0x7f, *range(0x80, 0xa0)]))


def test_every_control_is_shown_as_an_escape_and_text_is_kept():
    assert terminal.shown("a\x1b[2Jb\x9b31mc\x07\r\x08\x7f") == \
        "a\\x1b[2Jb\\x9b31mc\\x07\\x0d\\x08\\x7f"
    assert terminal.shown("two\nlines\tand a tab") == "two\nlines\tand a tab"
    assert terminal.one_line("two\nlines\tand a tab") == "two\\nlines\\tand a tab"
    text = "Zürich 東京 — «ok» 🙂 \\x1b"  # printable text, and a backslash, as it is
    assert terminal.shown(text) == terminal.one_line(text) == text
    for char in EVERY_CONTROL:
        assert terminal.one_line(char).startswith("\\"), repr(char)
        assert not set(terminal.one_line(char)) & set(EVERY_CONTROL)


def test_json_text_escapes_what_json_leaves_raw_and_reads_back_the_same():
    value = {"content": EVERY_CONTROL + "é", "tags": ["\x9b31m"]}
    text = terminal.json_text(value)
    assert json.loads(text) == value
    assert not set(text) & (set(EVERY_CONTROL) - {"\n"})


def test_a_shown_stream_escapes_whatever_is_printed_through_it():
    beneath = io.StringIO()
    print("x\x1b]52;c;YQ==\x07", "y", file=terminal.Shown(beneath))
    assert beneath.getvalue() == "x\\x1b]52;c;YQ==\\x07 y\n"


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_writes_its_own_controls_and_escapes_the_daemons():
    tty = _Tty()
    bar = Progress("reindex /w/\x1b[2J", stream=terminal.Shown(tty))
    bar(1, 2, "file \x9b31m.py\n")
    bar.finish()
    written = tty.getvalue()
    assert written.startswith("\rreindex /w/\\x1b[2J [") and written.endswith("\x1b[K\n")
    assert "file \\x9b31m.py\\n" in written and "\x9b" not in written
