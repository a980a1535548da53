"""The manual in docs/ names everything a user can set or call (as datasette's test_docs.py).

Each environment variable memnest reads (every MEMNEST_* / MEMORY_* string literal in daemon/
and shims/) and each field of `Settings` has an entry in docs/configuration.md, each MCP tool
and each of its arguments one in docs/tools.md, each memnest-ctl subcommand (nested ones such
as `tls init` too) one in docs/cli.md. An entry is a heading, a definition term or the first
cell of a table row naming it in backticks. README.md stays short, and no relative link in it
or in docs/ names a missing file. No daemon is started.
"""
import argparse
import ast
import dataclasses
import re
import typing
from pathlib import Path

import pytest
from memnest_daemon.core.config import Settings
from memnest_daemon.tools import TOOLS
from memnest_shims.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README_MAX_LINES = 260
ENV_NAME = re.compile(r"(MEMNEST|MEMORY)_[A-Z0-9_]*[A-Z0-9]")


def without_code(text: str) -> str:
    """The text with fenced code blocks blanked out (their lines kept, so numbers hold)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else line)
    return "\n".join(lines)


def entries(text: str) -> list[str]:
    """What a page defines: its headings, definition terms and first cells of table rows."""
    found = []
    for line in without_code(text).splitlines():
        if line.startswith("#") or line.startswith("`"):
            found.append(line)
        elif line.startswith("|") and not set(line) <= set("|-: "):
            found.append(line.split("|")[1])
    return found


def has_entry(page: str, name: str) -> bool:
    return any(f"`{name}`" in entry for entry in entries((DOCS / page).read_text()))


# -- what memnest offers -------------------------------------------------------------------------

def environment_variables() -> list[str]:
    names = set()
    for folder in ("daemon", "shims"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                        ENV_NAME.fullmatch(node.value):
                    names.add(node.value)
    return sorted(names)


def settings_fields(cls: type = Settings, prefix: str = "") -> list[str]:
    """Every leaf field of Settings, a nested dataclass's as `parent.field`."""
    hints = typing.get_type_hints(cls)
    names = []
    for field in dataclasses.fields(cls):
        kind = hints[field.name]
        if dataclasses.is_dataclass(kind) and isinstance(kind, type):
            names += settings_fields(kind, f"{prefix}{field.name}.")
        else:
            names.append(prefix + field.name)
    return names


def subcommands(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    names = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                names.append(prefix + name)
                names += subcommands(sub, f"{prefix}{name} ")
    return names


def tool_section(name: str) -> str:
    """The part of docs/tools.md from the tool's heading to the next heading of its level."""
    text = without_code((DOCS / "tools.md").read_text())
    match = re.search(rf"^(#+) `{name}`\s*$", text, re.M)
    if match is None:
        return ""
    level = match.group(1)
    rest = text[match.end():]
    following = re.search(rf"^{level} ", rest, re.M)
    return rest[:following.start()] if following else rest


def test_the_lists_are_found():
    # a scan that finds nothing would pass every test below
    assert "MEMORY_EMBEDDING_MODEL" in environment_variables()
    assert "MEMNEST_TLS_LISTEN" in environment_variables()
    assert "embedding_model" in settings_fields()
    assert "memory_search" in TOOLS
    assert {"show", "tls", "tls init", "tls client"} <= set(subcommands(build_parser()))


# -- entries ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", environment_variables())
def test_environment_variable_is_documented(name):
    assert has_entry("configuration.md", name), \
        f"{name} is read by memnest but has no entry in docs/configuration.md"


@pytest.mark.parametrize("field", settings_fields())
def test_setting_is_documented(field):
    assert has_entry("configuration.md", field), \
        f"Settings.{field} has no entry in docs/configuration.md (name it beside its variable)"


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_tool_and_its_arguments_are_documented(tool):
    section = tool_section(tool)
    assert section, f"the MCP tool {tool} has no heading in docs/tools.md"
    missing = [arg for arg in TOOLS[tool].schema.get("properties", {})
               if not any(f"`{arg}`" in entry for entry in entries(section))]
    assert not missing, f"arguments of {tool} with no entry in docs/tools.md: {missing}"


@pytest.mark.parametrize("command", subcommands(build_parser()))
def test_subcommand_is_documented(command):
    headings = [e for e in entries((DOCS / "cli.md").read_text()) if e.startswith("#")]
    assert any(f"`memnest-ctl {command}`" in h for h in headings), \
        f"memnest-ctl {command} has no heading in docs/cli.md"


# -- the pages themselves --------------------------------------------------------------------------

def test_readme_stays_short():
    lines = len((ROOT / "README.md").read_text().splitlines())
    assert lines < README_MAX_LINES, \
        f"README.md has {lines} lines; move the details into docs/ (under {README_MAX_LINES})"


LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", ["README.md", *sorted(
    str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md"))])
def test_relative_links_name_files_that_exist(page):
    path = ROOT / page
    text = re.sub(r"`[^`\n]*`", "", without_code(path.read_text()))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor on the same page
        if not (path.parent / target.split("#", 1)[0]).exists():
            broken.append(target)
    assert not broken, f"{page} links to files that do not exist: {broken}"


RESULTS_REF = re.compile(r"RESULTS\.md#([A-Za-z0-9_-]+)")
RESULTS_ANCHOR = re.compile(r'<a id="([^"]+)"')


def test_results_references_name_anchors_that_exist():
    """Comments and pages cite bench/RESULTS.md by a topic's anchor; each must still be there."""
    anchors = set(RESULTS_ANCHOR.findall((ROOT / "bench" / "RESULTS.md").read_text()))
    sources = [ROOT / "README.md", *DOCS.rglob("*.md"),
               *(p for part in ("daemon", "shims", "bench", "tests")
                 for p in (ROOT / part).rglob("*.py"))]
    missing = sorted({f"{p.relative_to(ROOT)}: #{name}" for p in sources
                      for name in RESULTS_REF.findall(p.read_text(errors="replace"))
                      if name not in anchors})
    assert not missing, f"references to anchors bench/RESULTS.md does not have: {missing}"


TEST_FILE = re.compile(r"\b(?:tests/)?(?:[a-z_]+/)*test_[a-z0-9_]+\.py\b")


def test_test_files_the_pages_name_exist():
    """The manual says which test keeps each promise; a test moved or renamed updates it."""
    have = {p.name for p in (ROOT / "tests").rglob("test_*.py")}
    missing = []
    for page in [ROOT / "README.md", *DOCS.rglob("*.md")]:
        for named in TEST_FILE.findall(page.read_text()):
            found = (ROOT / named).exists() if named.startswith("tests/") \
                else Path(named).name in have
            if not found:
                missing.append(f"{page.relative_to(ROOT)}: {named}")
    assert not missing, f"pages name test files that do not exist: {missing}"
