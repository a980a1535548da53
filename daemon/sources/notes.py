"""Memories as Markdown notes, both ways. memnest's own note (one memory per file: YAML
frontmatter with its fields, the text, then its links as `- explains [[other-note]]`)
written by an export and read back whole by an import; and the conventions of other notes
folders read as pieces (basic-memory's `- [category] text #tag (context)` observations and
`- relation [[Target]]` lines, Obsidian's [[wikilinks]] and #tags)."""
import re
from dataclasses import dataclass, field
from typing import Final

from ..core.types import CATEGORIES, Category
from . import markdown

NOTE_MARK: Final = "memnest"  # the frontmatter key of memnest's own notes, and its version
RELATIONS_HEADING: Final = "## Relations"
# Relation names as notes write them, and the relation each becomes here.
RELATION_WORDS: Final = {"related_to": "RELATED_TO", "relates_to": "RELATED_TO",
                         "links_to": "RELATED_TO", "supersedes": "SUPERSEDES",
                         "replaces": "SUPERSEDES", "explains": "EXPLAINS"}
NOTE_WORDS: Final = {v: k for k, v in RELATION_WORDS.items() if k in (
    "related_to", "supersedes", "explains")}
# No part of a link holds a bracket, so a search tried at each `[[` stops at the next one:
# linear in a run of `[` (which took seconds when the parts could take it whole).
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n|#^]+)(?:[#^][^\[\]\n|]*)?(?:\\?\|[^\[\]\n]*)?\]\]")
_RELATION_LINE = re.compile(r"^(?:([A-Za-z][\w-]{0,40})[ \t]+)?\[\[([^\]\n]+)\]\]"
                            r"(?:[ \t]*\(([^)\n]*)\))?[ \t]*$")
_OBSERVATION = re.compile(r"^\[([^\[\]()\n]{1,40})\][ \t]+(.+)$", re.S)
_NOT_A_CATEGORY = re.compile(r"^([ xX/>?-]|\d{1,2}:\d{2}(:\d{2})?)$")
_TAG = re.compile(r"(?<![\w/&#])#([A-Za-z_][\w/-]{0,48})")
_SLUG = re.compile(r"[a-z0-9]+")


# -- memnest's own notes ---------------------------------------------------------------------

@dataclass(frozen=True)
class NoteMemory:
    """A memory as a note holds it."""
    content: str
    category: Category = "general"
    tags: tuple[str, ...] = ()
    importance: int = 3
    relations: tuple[tuple[str, str], ...] = ()  # (relation, the other note's name)
    body_start: int = 1  # the first line of the text, 1-based
    body_end: int = 1  # its last line


def note_name(memory_id: int, content: str) -> str:
    """A note's file name without .md: the id (unique) and the start of the text."""
    words = "-".join(_SLUG.findall(content.lower()))[:48].strip("-")
    return f"{memory_id}-{words}" if words else str(memory_id)


def render_note(fields: dict[str, object], content: str,
                relations: list[tuple[str, str]]) -> str:
    """One memory as a note: `fields` as frontmatter (lists as blocks), then the text,
    then its relations, each `- relation [[note]]`."""
    lines = ["---", f"{NOTE_MARK}: 1"]
    for key, value in fields.items():
        if value is None or value == "":
            continue
        if isinstance(value, (list, tuple)):
            lines.append(f"{key}:")
            lines += [f"  - {_yaml_text(str(v))}" for v in value]
        else:
            lines.append(f"{key}: {_yaml_text(str(value))}")
    lines += ["---", *(_escaped(line) for line in content.split("\n"))]
    if relations:
        lines += ["", RELATIONS_HEADING]
        lines += [f"- {NOTE_WORDS.get(rel, 'related_to')} [[{name}]]" for rel, name in relations]
    return "\n".join(lines) + "\n"


def _yaml_text(value: str) -> str:
    """A frontmatter value on one line, quoted when YAML would read it as something else."""
    plain = value.replace("\n", " ")
    if plain != value or not plain or plain[0] in "!&*[]{}#|>@`\"'%,?:-" or \
            ": " in plain or " #" in plain:
        return '"' + plain.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return plain


def _escaped(line: str) -> str:
    """A line of a memory's text as a note holds it: one that reads as the Relations
    heading (or as one escaped) gets a backslash before it, so that only the section
    render_note writes is read as links. _unescaped undoes it."""
    if line.strip().lstrip("\\") != RELATIONS_HEADING:
        return line
    at = len(line) - len(line.lstrip())
    return f"{line[:at]}\\{line[at:]}"


def _unescaped(line: str) -> str:
    if not line.strip().startswith("\\") or line.strip().lstrip("\\") != RELATIONS_HEADING:
        return line
    at = len(line) - len(line.lstrip())
    return line[:at] + line[at + 1:]


def read_note(doc: markdown.Document, text: str) -> NoteMemory | None:
    """The memory a note of memnest's own holds (None when the note is not one): the text
    between the frontmatter and a closing Relations section made only of relation lines.
    Lines are cut at \\n only, as render_note joined them: the text comes back as written."""
    if str(doc.front.get(NOTE_MARK, "")) != "1":
        return None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the newline ending the last line starts no other
    start = _after_front(lines)
    end, relations = len(lines), []
    heading = _last_index(lines, RELATIONS_HEADING, start)
    if heading is not None:
        found = [_relation(line[2:].strip()) for line in lines[heading + 1:]
                 if line.strip()]
        if all(r is not None and line.startswith("- ") for r, line in zip(
                found, [ln for ln in lines[heading + 1:] if ln.strip()])):
            relations = [r for r in found if r is not None]
            end = heading
    content = "\n".join(_unescaped(line) for line in lines[start:end]).strip()
    tags = doc.front.get("tags", [])
    importance = str(doc.front.get("importance", "3"))
    return NoteMemory(content, category_named(str(doc.front.get("category", ""))) or "general",
                      tuple(tags) if isinstance(tags, list) else (),
                      int(importance) if importance in ("1", "2", "3", "4", "5") else 3,
                      tuple(relations), start + 1, max(end, start + 1))


def category_named(label: str) -> Category | None:
    return next((c for c in CATEGORIES if c == label), None)


def _after_front(lines: list[str]) -> int:
    if lines and lines[0].strip() == "---":
        for n in range(1, len(lines)):
            if lines[n].strip() in ("---", "..."):
                return n + 1
    return 0


def _last_index(lines: list[str], wanted: str, start: int) -> int | None:
    for n in range(len(lines) - 1, start - 1, -1):
        if lines[n].strip() == wanted:
            return n
    return None


def _relation(text: str) -> tuple[str, str] | None:
    found = _RELATION_LINE.match(text)
    if found is None:
        return None
    word = (found.group(1) or "relates_to").lower()
    return RELATION_WORDS.get(word, "RELATED_TO"), link_target(found.group(2))


# -- other notes -----------------------------------------------------------------------------

@dataclass
class Observed:
    """What a piece of a notes folder says beyond its text."""
    text: str
    category: Category | None = None
    tags: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (relation, target)
    relation_only: bool = False  # a `- depends_on [[X]]` line: a link, not a memory


def observe(piece_text: str, raw: str) -> Observed:
    """basic-memory's and Obsidian's conventions in one piece (`raw`: the piece's own text,
    without the headings the piece is prefixed with)."""
    relation = _relation(raw) if "[[" in raw else None
    if relation is not None:
        return Observed(piece_text, links=[relation], relation_only=True)
    out = Observed(piece_text)
    observed = _OBSERVATION.match(raw)
    if observed and not _NOT_A_CATEGORY.match(observed.group(1)):
        label = observed.group(1).strip().lower()
        out.category = category_named(label)
        out.tags.append(label)
        out.text = piece_text.replace(f"[{observed.group(1)}] ", "", 1)
    out.tags += [t.lower() for t in _TAG.findall(_without_code(raw))]
    out.links = [("RELATED_TO", link_target(t)) for t in _WIKILINK.findall(raw)]
    return out


def link_target(text: str) -> str:
    """The note a [[link]] names, as names are matched: no alias, heading or folder, no
    .md, case folded."""
    name = re.split(r"\\?\|", text, maxsplit=1)[0].split("#", 1)[0].split("^", 1)[0]
    name = name.strip().rsplit("/", 1)[-1]
    return name.removesuffix(".md").strip().lower()


def _without_code(text: str) -> str:
    return re.sub(r"`[^`\n]*`|https?://\S+", "", text)
