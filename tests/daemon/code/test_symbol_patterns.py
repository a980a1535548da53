"""code/symbols.py's definition patterns run over the lines of a workspace file (up to
2 MiB, one line may be all of it): each is linear in the line, however hostile. As in
tests/daemon/sources/test_linear_patterns.py no clock is read: each line runs at 2,000,
32,000 and 256,000 characters under a generous timeout and the answer is checked. The
patterns replaced had two quantifiers side by side over the same characters
(`[ \\t]*\\*?[ \\t]*`, modifiers matched both as keywords and as words), quadratic: 0.3-3.5 s
at 16,000 characters, minutes at 256,000."""
import pytest

from memnest_daemon.code.symbols import find_definitions, outline

SIZES = (2_000, 32_000, 256_000)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("line, path", [
    ("function{s}x send", "a.js"),
    ("send{s}x", "a.js"),
    ("send{s}<T>{s}x", "a.ts"),
    ("{p}send x", "a.java"),
    ("{p}class{s}x send", "a.java"),
])
def test_a_hostile_line_is_not_a_definition_and_costs_linear_time(line, path, n):
    text = line.format(s=" " * n, p="public " * (n // 7))
    assert find_definitions([text, "}"], "send", path) == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("line", ["function{s}1", "export{s}default{s}function{s}*{s}1"])
def test_a_hostile_top_level_line_is_outlined_in_linear_time(line, n):
    text = line.format(s=" " * n)
    assert outline([text, "function kept() {", "}"], "a.js") == [("kept", 1, 2)]


@pytest.mark.timeout(30)
@pytest.mark.parametrize("n", SIZES)
def test_real_definitions_with_long_runs_are_still_found(n):
    spaces = " " * n
    lines = [f"function{spaces}*{spaces}send(a) {{", "}",
             f"public{spaces}static{spaces}class{spaces}send {{", "}"]
    assert find_definitions(lines[:2], "send", "a.js") == [(0, 1)]
    assert find_definitions(lines[2:], "send", "a.java") == [(0, 1)]
    assert outline([f"function{spaces}send(a) {{", "}"], "a.js") == [("send", 0, 1)]
