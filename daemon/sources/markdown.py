"""A Markdown file split the way a person would note it down: each bullet that states one
fact is a piece (with the bullets nested under it), the prose of a heading's section is one
piece (split at paragraphs when long), each with the headings above it and its lines. YAML
frontmatter is read for the few plain fields rule files use; fenced code, tables and
quotes stay whole inside the piece around them; HTML comments are left out."""
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

SECTION_CHARS = 1500  # prose of one section kept as one piece up to this many characters
MIN_PIECE_CHARS = 8  # shorter pieces ("TODO", a lone link label) say nothing on their own
FRONT_KEYS = 100  # frontmatter keys read, at most
# A heading's marks; its text is cut from the rest of the line by _heading_text: a pattern
# with quantifiers side by side over the same spaces took seconds on a run of them.
_HEADING = re.compile(r"(#{1,6})[ \t]")
_BULLET = re.compile(r"^([-*+]|\d{1,9}[.)])[ \t]+(.*)$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^[ \t]{0,3}([-*_])([ \t]*\1){2,}[ \t]*$")
_KEY = re.compile(r"^([A-Za-z_][\w-]{0,63})[ \t]*:[ \t]*(.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

BlockKind = Literal["prose", "bullet"]
FrontValue = str | bool | list[str]


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str
    start: int  # 1-based
    end: int
    trail: tuple[str, ...]  # the headings above it, outermost first


@dataclass(frozen=True)
class Piece:
    text: str  # with its headings as a prefix ("Testing > Fixtures: ...")
    start: int
    end: int
    trail: tuple[str, ...]
    raw: str = ""  # its own text, without the headings


@dataclass
class Document:
    front: dict[str, FrontValue] = field(default_factory=dict)
    blocks: list[Block] = field(default_factory=list)
    title: str = ""  # the first heading, when it is the document's one level-1 heading


def parse(text: str) -> Document:
    lines = text.splitlines()
    doc = Document()
    first = _front_matter(lines, doc)
    _Splitter(lines, doc).run(first)
    return doc


def pieces(doc: Document, max_chars: int) -> list[Piece]:
    """The document's pieces: bullets one by one (an intro line ending in ':' prefixed to
    each), a section's prose together up to SECTION_CHARS, nothing over `max_chars`."""
    out: list[Piece] = []
    prose: list[Block] = []
    intro = ""

    def flush() -> None:
        if prose:
            out.extend(_prose_pieces(prose, doc.title, max_chars))
            prose.clear()

    for block in doc.blocks:
        if prose and prose[-1].trail != block.trail:
            flush()
        if block.kind == "bullet":
            if prose and prose[-1].text.rstrip().endswith(":") and \
                    prose[-1].trail == block.trail and prose[-1].end + 1 >= block.start - 1:
                intro = prose.pop().text.rstrip()
            flush()
            if len(block.text) < MIN_PIECE_CHARS:
                continue
            text = f"{intro} {block.text}" if intro else block.text
            out.extend(_sized(Piece(_prefixed(block.trail, doc.title, text), block.start,
                                    block.end, block.trail, block.text), max_chars))
            continue
        intro = ""
        prose.append(block)
    flush()
    return out


def _prefixed(trail: tuple[str, ...], title: str, text: str) -> str:
    heads = [h for h in trail if h and h != title] if trail[:1] == (title,) and title \
        else [h for h in trail if h]
    return f"{' > '.join(heads)}: {text}" if heads else text


def _prose_pieces(blocks: list[Block], title: str, max_chars: int) -> Iterator[Piece]:
    """One section's prose: together while it fits SECTION_CHARS, else a piece per run of
    paragraphs that fits."""
    run: list[Block] = []
    size = 0
    for block in blocks:
        if run and size + len(block.text) > SECTION_CHARS:
            yield from _joined(run, title, max_chars)
            run, size = [], 0
        run.append(block)
        size += len(block.text) + 2
    if run:
        yield from _joined(run, title, max_chars)


def _joined(run: list[Block], title: str, max_chars: int) -> Iterator[Piece]:
    text = "\n\n".join(b.text for b in run)
    if len(text) < MIN_PIECE_CHARS:
        return
    trail = run[0].trail
    yield from _sized(Piece(_prefixed(trail, title, text), run[0].start, run[-1].end, trail,
                            text), max_chars)


def _sized(piece: Piece, max_chars: int) -> Iterator[Piece]:
    """The piece, or when it is over `max_chars` (one huge paragraph), consecutive parts of
    it cut at sentence ends (or hard, when a sentence is itself too long), same lines."""
    if len(piece.text) <= max_chars:
        yield piece
        return
    part = ""
    for sentence in _SENTENCE_END.split(piece.text):
        while len(sentence) > max_chars:
            if part:
                yield Piece(part, piece.start, piece.end, piece.trail, part)
                part = ""
            yield Piece(sentence[:max_chars], piece.start, piece.end, piece.trail,
                        sentence[:max_chars])
            sentence = sentence[max_chars:]
        if part and len(part) + 1 + len(sentence) > max_chars:
            yield Piece(part, piece.start, piece.end, piece.trail, part)
            part = ""
        part = f"{part} {sentence}" if part else sentence
    if part.strip():
        yield Piece(part, piece.start, piece.end, piece.trail, part)


# -- frontmatter -----------------------------------------------------------------------------

def _front_matter(lines: list[str], doc: Document) -> int:
    """Read a leading `---` block's plain `key: value` fields (lists as `[a, b]` or
    `- a` lines); returns the index of the first line after it."""
    if not lines or lines[0].strip() != "---":
        return 0
    for end in range(1, min(len(lines), 400)):
        if lines[end].strip() in ("---", "..."):
            break
    else:
        return 0
    key = ""
    for line in lines[1:end]:
        found = _KEY.match(line)
        if found and len(doc.front) < FRONT_KEYS:
            key, value = found.group(1), found.group(2).strip()
            doc.front[key] = _front_value(value) if value else []
        elif key and line.strip().startswith("- ") and isinstance(doc.front.get(key), list):
            listed = doc.front[key]
            assert isinstance(listed, list)
            listed.append(_unquoted(line.strip()[2:].strip()))
    return end + 1


def _front_value(value: str) -> FrontValue:
    if value.startswith("[") and value.endswith("]"):
        return [_unquoted(v.strip()) for v in value[1:-1].split(",") if v.strip()]
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return _unquoted(value)


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


# -- blocks ----------------------------------------------------------------------------------

class _Splitter:
    """One pass over the lines: headings set the trail; paragraphs, bullets (with what is
    indented under them), fences and tables become blocks."""

    def __init__(self, lines: list[str], doc: Document) -> None:
        self.lines = lines
        self.doc = doc
        self.trail: list[tuple[int, str]] = []  # (level, text)
        self.open: list[str] = []  # lines of the block being read
        self.open_kind: BlockKind = "prose"
        self.open_start = 0
        self.open_end = 0  # the last line read into it
        self.headings = 0

    def run(self, first: int) -> None:
        n = first
        lines = self.lines
        while n < len(lines):
            line = lines[n]
            stripped = line.strip()
            if stripped.startswith("<!--"):
                n = self._skip_comment(n)
                continue
            fence = _FENCE.match(line)
            if fence:
                n = self._fence(n, fence.group(1))
                continue
            heading = _HEADING.match(line) if line[:1] == "#" else None
            if heading:
                self._close(n)
                self._heading(len(heading.group(1)),
                              _inline(_heading_text(line[heading.end():])))
            elif not stripped or _RULE.match(line):
                if self.open_kind == "prose" or not self._continues_bullet(n):
                    self._close(n)
            elif _BULLET.match(line) and not line[:1].isspace():
                self._close(n)
                self._start(n, "bullet", _BULLET.match(line).group(2))  # type: ignore[union-attr]
            elif self.open_kind == "bullet" and self.open and line[:1].isspace():
                self._add(n, line.rstrip())
            else:
                if self.open_kind == "bullet":
                    self._close(n)
                if not self.open:
                    self._start(n, "prose", stripped)
                else:
                    self._add(n, line.rstrip())
            n += 1
        self._close(len(lines))

    def _continues_bullet(self, n: int) -> bool:
        """A blank line inside a bullet: the bullet goes on if the next text is indented."""
        for line in self.lines[n + 1:n + 3]:
            if line.strip():
                return line[:1].isspace()
        return False

    def _start(self, n: int, kind: BlockKind, text: str) -> None:
        self.open, self.open_kind, self.open_start, self.open_end = [text], kind, n, n

    def _add(self, n: int, line: str) -> None:
        if self.open_kind == "bullet" and n > self.open_end + 1:
            self.open.append("")  # the blank line inside the bullet
        self.open.append(line)
        self.open_end = n

    def _close(self, n: int) -> None:
        while self.open and not self.open[-1].strip():
            self.open.pop()
        if self.open:
            text = _dedent_children(self.open) if self.open_kind == "bullet" \
                else "\n".join(self.open)
            self.doc.blocks.append(Block(self.open_kind, text.strip(), self.open_start + 1,
                                         self.open_end + 1, tuple(t for _, t in self.trail)))
        self.open = []
        self.open_kind = "prose"

    def _heading(self, level: int, text: str) -> None:
        self.headings += 1
        while self.trail and self.trail[-1][0] >= level:
            self.trail.pop()
        self.trail.append((level, text))
        if self.headings == 1 and level == 1:
            self.doc.title = text
        elif level == 1 and text != self.doc.title:
            self.doc.title = ""  # several level-1 headings: each is a real section

    def _fence(self, n: int, marker: str) -> int:
        """A fenced block: kept whole in the block it is in (or one of its own)."""
        end = n + 1
        while end < len(self.lines):
            closing = _FENCE.match(self.lines[end])
            if closing and closing.group(1)[0] == marker[0] and \
                    len(closing.group(1)) >= len(marker):
                break
            end += 1
        body = [line.rstrip() for line in self.lines[n:end + 1]]
        if self.open:
            self.open.extend(body)
        else:
            self._start(n, "prose", body[0].strip())
            self.open.extend(body[1:])
        self.open_end = min(end, len(self.lines) - 1)
        return end + 1

    def _skip_comment(self, n: int) -> int:
        while n < len(self.lines) and "-->" not in self.lines[n]:
            n += 1
        return n + 1


def _dedent_children(lines: list[str]) -> str:
    """A bullet's first line and what is nested under it, the nesting kept relative."""
    children = [line for line in lines[1:] if line.strip()]
    indent = min((len(line) - len(line.lstrip()) for line in children), default=0)
    return "\n".join([lines[0], *(line[indent:] if line.strip() else "" for line in lines[1:])])


def _heading_text(rest: str) -> str:
    """What follows a heading's marks, without a closing run of #s and the spaces around."""
    return rest.strip(" \t").rstrip("#").rstrip(" \t")


def _inline(text: str) -> str:
    """A heading's text without emphasis markers around it."""
    return text.strip().strip("*_`").strip()
