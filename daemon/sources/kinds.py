"""The kinds of memory files memnest takes in: where each tool keeps them for a workspace,
and what a piece of each is (category, tags, the files it applies to). `read_source` finds a
kind's files (or those under the PATH given), reads them and splits them into Units."""
import dataclasses
import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.records import normalise_tags
from ..core.types import Category
from ..storage.safe_files import Confined
from . import markdown, notes, stores
from .files import Reader
from .units import Found, SourceFile, Unit, piece_tags, slug

MAX_UNITS = 50_000  # pieces taken from one import
NOTES_KINDS = ("markdown", "basic-memory")  # folders of notes: sources/notes.py reads them
IMPORT_DEPTH = 5  # CLAUDE.md @imports followed this many hops, as Claude Code does
_MD = re.compile(r"(?i).+\.md")
_MDC = re.compile(r"(?i).+\.mdc|\.cursorrules")
# An @import in a CLAUDE.md: @ at a word's start, then a path with a file extension. No
# character of a path may come before the @, so no search starts inside a path an earlier
# one scanned (`-@a-@a...` was scanned again from each @: quadratic).
_AT_IMPORT = re.compile(r"(?<![\w.@~+`/-])@((?:~/|\.{1,2}/|/)?[\w.@~+-]+(?:/[\w.@~+-]+)*\.\w+)")
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_BOILERPLATE = re.compile(r"This file provides guidance to [\w .()/-]{1,60} when working with "
                          r"code in this repository\.?$")
_INDEX_LINE = re.compile(r"\[[^\[\]\n]+\]\([^()\[\]\s]+\.md\)")  # no [ inside: linear


@dataclass(frozen=True)
class Spot:
    """A place a kind keeps files: a file, or a folder and the names in it (`recursive`:
    its subfolders too). `home`: relative to the person's home folder, not the workspace."""
    path: str
    names: re.Pattern[str] | None = None  # None: `path` is the file
    recursive: bool = False
    home: bool = False


@dataclass(frozen=True)
class Kind:
    name: str
    reads: str  # what it reads, in a phrase (docs, errors)
    spots: Callable[[str], list[Spot]]  # by workspace path
    names: re.Pattern[str] = _MD  # the files taken from a folder given as PATH
    category: Category = "general"
    follows_imports: bool = False
    needs_path: bool = False  # it keeps no files in a known place: PATH is needed
    # not Markdown: its parser (the file, max_chars, where to note the items it leaves out)
    split: Callable[[SourceFile, int, dict[str, str]], list[Unit]] | None = None


def _fixed(*spots: Spot) -> Callable[[str], list[Spot]]:
    return lambda workspace: list(spots)


def claude_project_folder(workspace: str) -> str:
    """Claude Code's per-project folder name under ~/.claude/projects/: the project's git
    root (its canonical path; the workspace outside git) with every character that is not
    an ASCII letter or digit made '-', one for one."""
    root = os.path.realpath(workspace)
    here = root
    while True:
        if os.path.exists(os.path.join(here, ".git")):
            root = here
            break
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return re.sub(r"[^A-Za-z0-9]", "-", root)


def _claude_spots(workspace: str) -> list[Spot]:
    config = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join("~", ".claude")
    config = os.path.expanduser(config)
    auto = os.path.join(config, "projects", claude_project_folder(workspace), "memory")
    return [Spot("CLAUDE.md"), Spot(".claude/CLAUDE.md"), Spot("CLAUDE.local.md"),
            Spot(".claude/rules", _MD, recursive=True),
            Spot(os.path.join(config, "CLAUDE.md"), home=True),
            Spot(os.path.join(config, "rules"), _MD, recursive=True, home=True),
            Spot(auto, _MD, home=True)]


def _basic_memory_spots(workspace: str) -> list[Spot]:
    home = os.environ.get("BASIC_MEMORY_HOME") or os.path.join("~", "basic-memory")
    return [Spot(os.path.expanduser(home), _MD, recursive=True, home=True)]


def _server_memory_spots(workspace: str) -> list[Spot]:
    """Where the memory server keeps its file: MEMORY_FILE_PATH when the daemon has it
    (absolute), else beside the package npx installed, else in the workspace."""
    named = os.environ.get("MEMORY_FILE_PATH", "")
    found = [named] if os.path.isabs(os.path.expanduser(named)) else []
    found += sorted(glob.glob(os.path.expanduser(
        "~/.npm/_npx/*/node_modules/@modelcontextprotocol/server-memory/dist/memory.json*")))
    return [*(Spot(os.path.expanduser(p), home=True) for p in found),
            Spot("memory.jsonl"), Spot("memory.json")]


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("claude-code", "CLAUDE.md (project, .claude/, local and your own in ~/.claude) with "
         "their @imports, .claude/rules/, and the auto memory Claude Code keeps for the "
         "project in ~/.claude/projects/", _claude_spots, follows_imports=True),
    Kind("cline", "the memory bank (memory-bank/*.md) and .clinerules",
         _fixed(Spot("memory-bank", _MD), Spot(".clinerules"),
                Spot(".clinerules", re.compile(r"(?i).+\.(md|txt)"), recursive=True))),
    Kind("cursor", "Cursor rules (.cursor/rules/*.mdc, in any folder's .cursor/rules) and "
         "the legacy .cursorrules",
         _fixed(Spot(".", _MDC, recursive=True), Spot(".cursorrules")), names=_MDC,
         category="preference"),
    Kind("kiro", "Kiro steering files (.kiro/steering/*.md)",
         _fixed(Spot(".kiro/steering", _MD, recursive=True))),
    Kind("agents-md", "AGENTS.md, at the top and in any folder below",
         _fixed(Spot(".", re.compile(r"AGENTS(\.override)?\.md"), recursive=True)),
         names=re.compile(r"AGENTS(\.override)?\.md")),
    Kind("copilot", "GitHub Copilot's .github/copilot-instructions.md and "
         ".github/instructions/*.instructions.md",
         _fixed(Spot(".github/copilot-instructions.md"),
                Spot(".github/instructions", re.compile(r"(?i).+\.instructions\.md"),
                     recursive=True))),
    Kind("serena", "Serena's memories (.serena/memories/*.md)",
         _fixed(Spot(".serena/memories", _MD, recursive=True))),
    Kind("windsurf", "Windsurf rules (.windsurf/rules/*.md) and the legacy .windsurfrules",
         _fixed(Spot(".windsurf/rules", _MD, recursive=True), Spot(".windsurfrules")),
         category="preference"),
    Kind("markdown", "a folder of Markdown notes (an Obsidian vault, basic-memory's folder): "
         "PATH is needed", _fixed(), needs_path=True),
    Kind("basic-memory", "basic-memory's notes: its default project (BASIC_MEMORY_HOME, or "
         "~/basic-memory), read as a notes folder", _basic_memory_spots),
    Kind("server-memory", "the official MCP memory server's memory.jsonl (MEMORY_FILE_PATH, "
         "the npx cache, or the workspace's memory.jsonl)", _server_memory_spots,
         names=re.compile(r"(?i).+\.jsonl?"), split=stores.server_memory_units),
    Kind("mem0", "a mem0 export or get_all dump (JSON): PATH is needed", _fixed(),
         names=re.compile(r"(?i).+\.json"), needs_path=True, split=stores.mem0_units),
)}

# Cline's memory bank names its files by what they hold.
_CLINE_CATEGORIES: dict[str, Category] = {
    "systempatterns": "pattern", "techcontext": "learning", "decisionlog": "decision"}
# Claude Code's auto-memory topic files say what they hold in `type`.
_CLAUDE_TYPES: dict[str, Category] = {"feedback": "preference", "user": "preference",
                                      "reference": "learning"}
_PREFERENCE = re.compile(r"(?i)\b(always|never|prefer|avoid|don't|do not|must|should|"
                         r"instead of)\b")
_DECISION = re.compile(r"(?i)\b(we decided|decided to|decision|we chose|agreed to)\b")
_PATTERN = re.compile(r"(?i)\b(pattern|convention|naming|layout|structure)\b")
# Files named for what tool reads them, not for their topic: their names make no tag.
_GENERIC_STEMS = frozenset({"claude", "claude.local", "agents", "agents.override",
                            "copilot-instructions", "memory", "readme", "index", "rules",
                            ".cursorrules", ".windsurfrules", ".clinerules"})


def read_source(kind: Kind, workspace: str, path: str | None, max_chars: int,
                confined: Confined | None = None, home: str | None = None) -> Found:
    """The kind's units for this workspace: from `path` (a file, or a folder searched for
    the kind's files) when given, else from where the kind keeps them."""
    found = Found()
    reader = Reader(workspace, found, confined, home)
    for file_path in _paths(kind, reader, workspace, path):
        _take(kind, reader, file_path, max_chars, found, depth=0)
        if len(found.units) >= MAX_UNITS:
            found.skipped["…"] = f"over {MAX_UNITS} pieces; the rest were not read"
            del found.units[MAX_UNITS:]
            break
    return found


def _paths(kind: Kind, reader: Reader, workspace: str, path: str | None) -> list[str]:
    if path is not None:
        reader.found.looked_in.append(reader.absolute(path))
        if reader.is_dir(path):
            return reader.files_in(path, kind.names, recursive=True)
        return [path]
    out: list[str] = []
    spots = kind.spots(workspace)
    folders = {s.path for s in spots if s.names is not None}  # a name that is either
    for spot in spots:
        where = os.path.join(reader.home, spot.path) if spot.home else spot.path
        if spot.home and reader.confined is not None:
            continue  # the person's own files: for a local client only
        reader.found.looked_in.append(reader.absolute(where))
        if spot.names is None:
            if reader.exists(where) and not reader.is_dir(where):
                out.append(where)
            elif reader.exists(where) and spot.path not in folders:
                reader.found.skipped[reader.shown(where)] = "not a regular file"
        elif reader.is_dir(where) or not reader.exists(where):
            out += reader.files_in(where, spot.names, spot.recursive)
    return out


def _take(kind: Kind, reader: Reader, path: str, max_chars: int, found: Found,
          depth: int) -> None:
    """One file's units, then (CLAUDE.md) the files it @imports."""
    source = reader.read(path)
    if source is None:
        return
    if kind.split is not None:
        left_out: dict[str, str] = {}  # its memories of the wrong shape
        try:
            found.units += kind.split(source, max_chars, left_out)
        except stores.NotThisKind as wrong:
            found.files.remove(source)  # not read as far as its memories go
            found.skipped[source.shown] = f"not a {kind.name} file: {wrong}"
            return
        found.skipped.update(left_out)
        return
    doc = markdown.parse(source.text)
    if kind.name in NOTES_KINDS:
        _take_note(kind, source, doc, max_chars, found)
        return
    scope = applies_to(doc.front)
    category, tags = _file_meta(kind, source, doc)
    named = doc.front.get("name") or doc.front.get("title")
    index = os.path.basename(source.shown) == "MEMORY.md"
    for piece in markdown.pieces(doc, max_chars):
        if index and _INDEX_LINE.search(piece.text):
            continue  # Claude's MEMORY.md line pointing at a topic file, imported itself
        if _BOILERPLATE.match(piece.text):
            continue  # the line `claude /init` and its kind open every file with
        text = piece.text
        if isinstance(named, str) and named and not piece.trail:
            text = f"{named}: {text}"
        if scope:
            text = f"{text} (applies to {scope})"
        found.units.append(Unit(text[:max_chars], source, piece.start, piece.end,
                                infer_category(piece.text, category),
                                _tags(tags, piece.trail, doc.title)))
    if kind.follows_imports and depth < IMPORT_DEPTH:
        for target in _imports(reader, source, path, found):
            _take(kind, reader, target, max_chars, found, depth + 1)


def _take_note(kind: Kind, source: SourceFile, doc: markdown.Document, max_chars: int,
               found: Found) -> None:
    """A note of a notes folder: memnest's own (one memory, its fields and links), or
    another's, split into pieces with basic-memory's and Obsidian's conventions read; the
    first piece is the one other notes' [[links]] reach."""
    stem = os.path.basename(source.shown).removesuffix(".md")
    own = notes.read_note(doc, source.text)
    if own is not None:
        if own.content:
            found.units.append(Unit(own.content[:max_chars], source, own.body_start,
                                    own.body_end, own.category, tuple(normalise_tags(own.tags)),
                                    own.importance, (stem.lower(),), own.relations))
        return
    keys = tuple(dict.fromkeys(k.lower() for k in (
        stem, str(doc.front.get("title", "")), str(doc.front.get("permalink", ""))) if k))
    category, tags = _file_meta(kind, source, doc)
    first = len(found.units)
    relations: list[tuple[str, str]] = []
    for piece in markdown.pieces(doc, max_chars):
        seen = notes.observe(piece.text, piece.raw)
        if seen.relation_only:
            relations += seen.links
            continue
        found.units.append(Unit(seen.text[:max_chars], source, piece.start, piece.end,
                                seen.category or infer_category(seen.text, category),
                                _tags(tags + seen.tags, piece.trail, doc.title),
                                keys=keys if len(found.units) == first else (),
                                links=tuple(seen.links)))
    if relations and len(found.units) > first:
        head = found.units[first]
        found.units[first] = dataclasses.replace(head, links=head.links + tuple(relations))


def applies_to(front: dict[str, markdown.FrontValue]) -> str:
    """The files a rule file says it applies to, when it does not apply everywhere:
    Cursor's globs, Copilot's applyTo, Kiro's fileMatchPattern, Windsurf's globs."""
    if front.get("alwaysApply") is True or front.get("trigger") in ("always_on", "always") \
            or front.get("inclusion") == "always":
        return ""
    for key in ("globs", "applyTo", "fileMatchPattern", "paths"):
        value = front.get(key)
        listed = value if isinstance(value, list) else \
            [v.strip() for v in value.split(",")] if isinstance(value, str) else []
        listed = [v for v in listed if v and v != "**"]
        if listed:
            return ", ".join(listed)[:200]
    return ""


def _file_meta(kind: Kind, source: SourceFile, doc: markdown.Document
               ) -> tuple[Category, list[str]]:
    stem = os.path.basename(source.shown)
    for suffix in (".instructions.md", ".mdc", ".md", ".txt"):
        if stem.lower().endswith(suffix):
            stem = stem[:-len(suffix)]
            break
    category = _CLINE_CATEGORIES.get(stem.lower(), kind.category) if kind.name == "cline" \
        else _CLAUDE_TYPES.get(str(doc.front.get("type", "")), kind.category)
    tags = [kind.name]
    if stem.lower() not in _GENERIC_STEMS:
        tags.append(slug(stem))
    listed = doc.front.get("tags")
    if isinstance(listed, list):
        tags += [slug(t) for t in listed]
    elif isinstance(listed, str):
        tags += [slug(t) for t in listed.replace(",", " ").split()]
    return category, tags


def _tags(file_tags: list[str], trail: tuple[str, ...], title: str) -> tuple[str, ...]:
    heads = [h for h in trail if h and h != title]
    return piece_tags(file_tags + ([slug(heads[0])] if heads else []))


def infer_category(text: str, default: Category) -> Category:
    """A file's own category, unless the words of the piece say more."""
    if default != "general":
        return default
    if _DECISION.search(text):
        return "decision"
    if _PREFERENCE.search(text):
        return "preference"
    if _PATTERN.search(text):
        return "pattern"
    return default


def _imports(reader: Reader, source: SourceFile, path: str, found: Found) -> list[str]:
    """The files a CLAUDE.md @imports, outside code: relative to the file, or ~/. A file in
    the workspace may import only from the workspace: the repository does not choose which
    of the person's own files are read."""
    base = os.path.dirname(reader.absolute(path))
    out: list[str] = []
    fenced = False
    for line in source.text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in _AT_IMPORT.findall(_CODE_SPAN.sub("", line)):
            full = os.path.normpath(os.path.expanduser(target) if target.startswith("~/")
                                    else os.path.join(base, target))
            if source.inside and reader.inside(full) is None:
                found.skipped[f"@{target} in {source.shown}"] = (
                    "outside the workspace: a file in the repository does not choose which "
                    "of your files are read; import it with --from claude-code and its path")
                continue
            if reader.exists(full):
                out.append(full)
            else:
                found.skipped[f"@{target} in {source.shown}"] = "no such file"
    return out
