"""Every regular expression memnest runs over a file's text is linear in it: a heading
followed by thousands of spaces, a run of `[`, `-@a-@a...` cost a few steps per character,
never a scan of the rest of the line from each character (quadratic) or from each pair
(cubic), which would hold the GIL and freeze the daemon, at every edit of a followed file.

No clock is read. Each hostile text runs at 2,000, 32,000 and 256,000 characters in one
process under a generous timeout, and the result is checked at every size. Linear patterns
take milliseconds at the largest; the patterns they replaced backtracked: the heading's
three adjacent quantifiers took 17 s at 2,000 spaces (cubic: days at 32,000), the others
were quadratic (0.2-3.5 s at 16,000, so minutes to an hour at 256,000). What makes the
patterns linear: no two quantifiers next to each other, or one inside the other, can take
the same characters, so a failed match gives each character back once; and a pattern that
searches (findall) cannot restart inside the run an earlier start already scanned."""
import pytest

from memnest_daemon.sources import markdown, notes
from memnest_daemon.sources.kinds import KINDS, read_source

SIZES = (2_000, 32_000, 256_000)


def _heading(text: str) -> str:
    doc = markdown.parse(text + "\n\n- a bullet under it that says something\n")
    return doc.title


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("line, title", [
    ("# a{s}b", "a{s}b"),  # spaces then text: the old pattern split the spaces three ways
    ("# a{t}b", "a{t}b"),
    ("#{s}a", "a"),
    ("# x{s}#{s}y", "x{s}#{s}y"),
    ("# Title{s}##{s}", "Title"),  # a closing sequence, spaces both sides
    ("#{t}", ""),
])
def test_a_heading_with_a_run_of_spaces_is_read_in_linear_time(line, title, n):
    spaces, tabs = " " * n, "\t" * n
    assert _heading(line.format(s=spaces, t=tabs)) == title.format(s=spaces, t=tabs)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
def test_rules_bullets_and_frontmatter_with_long_runs_stay_linear(n):
    spaces = " " * n
    doc = markdown.parse(f"---\nname{spaces}x\ntitle:{spaces}Kept\n---\n"
                         f"- {'- ' * n}x\n\n{'- ' * n}\n\n*{spaces}*{spaces}*{spaces}x\n")
    assert doc.front == {"title": "Kept"}  # `name` without its colon is no field
    assert [(b.kind, b.text[-3:]) for b in doc.blocks] == [("bullet", "- x"),
                                                           ("bullet", "  x")]  # the rule: none


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("tail", ["[", "[[a#", "[[a|", "[[a\\"])
def test_wikilinks_are_found_in_linear_time(tail, n):
    raw = "see [[Target note|alias]] and " + tail * (n // len(tail))
    seen = notes.observe(raw, raw)
    assert seen.links == [("RELATED_TO", "target note")]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("noise", ["-@a", ".@a", "~@a", "+@b/"])
def test_claude_md_imports_are_found_in_linear_time(tmp_path, noise, n):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "extra.md").write_text("- Extra rules that CLAUDE.md imports\n")
    (tmp_path / "CLAUDE.md").write_text(noise * (n // len(noise)) + "\n\nSee @docs/extra.md\n")
    found = read_source(KINDS["claude-code"], str(tmp_path), "CLAUDE.md", 1 << 20,
                        home=str(tmp_path / "home"))
    assert [f.shown for f in found.files] == ["CLAUDE.md", "docs/extra.md"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("noise", ["[", "[a](x"])
def test_memory_md_index_lines_are_found_in_linear_time(tmp_path, noise, n):
    hostile = noise * (n // len(noise))
    (tmp_path / "MEMORY.md").write_text(f"- [Topic](topic.md)\n\n{hostile}\n")
    found = read_source(KINDS["claude-code"], str(tmp_path), "MEMORY.md", 1 << 20,
                        home=str(tmp_path / "home"))
    assert [u.text for u in found.units] == [hostile]
