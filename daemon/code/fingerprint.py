"""A whole file's code, told apart from its comments and layout: what a whole-file anchor
records, so that a comment or whitespace edit leaves it fresh and a code edit does not.

The code of a file is its lines less blank lines and comments (whole-line comments, block
comments that start a line, and trailing comments after whitespace outside a string), each
rstrip()ed, and in languages where indentation means nothing also lstrip()ed. Comment syntax
comes from the extension; a file of unknown kind (Markdown, text, JSON) is all code. Rough
by design, like symbols.py: a `#` inside a docstring reads as a comment, which only makes the
fingerprint a little blinder, never a change where there is none.

`outline` names the file's definitions with a short hash of each one's code, so that a
changed file can say which functions or classes changed, even with no old copy to diff.
"""
import hashlib
import re
from collections.abc import Iterable

from .symbols import outline as definitions

MAX_OUTLINE = 960    # characters of a stored outline (a stored context stays small)
_SHORT = 8           # hex characters of a definition's hash in the outline
CUT = "…"            # ends an outline that did not name every definition
MAX_SCANNED = 4000   # a longer line (minified, generated) is not searched for a comment

_HASH = frozenset("""py pyi pyx rb sh bash zsh fish pl pm r jl ex exs toml yaml yml cfg conf
    ini properties mk cmake dockerfile tf hcl nim ps1 graphql gql php""".split())
_SLASH = frozenset("""js jsx mjs cjs ts tsx mts cts go rs java kt kts scala groovy gradle c h
    cc cpp cxx hpp hh hxx cs fs fsx swift m mm php dart zig proto css scss sass less jsonc
    tf hcl vue svelte""".split())
_DASH = frozenset("sql lua hs".split())
# Where a comment or a string may start, and where a string may end.
_JUMPS = {m: re.compile("[" + re.escape(m) + "'\"`]") for m in
          ("#", "/", "-", "#/", "#-", "/-", "#/-")}
_IN_QUOTE = {q: re.compile("[\\\\" + q + "]") for q in "'\"`"}
# Where indentation is only layout, a line is compared without it.
_UNINDENTED = _SLASH | _DASH | frozenset("rb sh bash zsh fish pl pm r jl ex exs toml ps1 php"
                                         .split())


def _extension(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    return name.rsplit(".", 1)[-1] if "." in name else name


def code_lines(lines: "tuple[str, ...] | list[str]", path: str) -> list[tuple[int, str]]:
    """(0-based line number, the line's code) for each line that holds code."""
    ext = _extension(path)
    hashes, slashes, dashes = ext in _HASH, ext in _SLASH, ext in _DASH
    unindent = ext in _UNINDENTED
    out: list[tuple[int, str]] = []
    in_block = False
    marks = ("#" if hashes else "") + ("/" if slashes else "") + ("-" if dashes else "")
    has_mark = re.compile("[" + re.escape(marks) + "]").search if marks else None
    for n, line in enumerate(lines):
        text = line.strip()
        if in_block:
            end = text.find("*/")
            if end < 0:
                continue
            in_block, line = False, text[end + 2:]
        elif slashes and text.startswith("/*"):
            end = text.find("*/", 2)
            if end < 0:
                in_block = True
                continue
            line = text[end + 2:]  # what follows the comment (never indentation-sensitive)
        if has_mark is not None and has_mark(line):
            line = _without_comment(line, hashes, slashes, dashes)
        code = line.rstrip()
        if unindent:
            code = code.lstrip()
        if code.strip():
            out.append((n, code))
    return out


def _without_comment(line: str, hashes: bool, slashes: bool, dashes: bool) -> str:
    """The line up to a comment that starts it or follows whitespace, outside quotes. A
    line over MAX_SCANNED characters (minified, generated) is taken whole."""
    marks = ("#" if hashes else "") + ("/" if slashes else "") + ("-" if dashes else "")
    if not marks or len(line) > MAX_SCANNED:
        return line
    jump = _JUMPS[marks]
    quote = ""
    k = 0
    while True:
        found = (_IN_QUOTE[quote] if quote else jump).search(line, k)
        if found is None:
            return line
        k = found.start()
        ch = line[k]
        if quote:
            k += 2 if ch == "\\" else 1
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote, k = ch, k + 1
        elif (k == 0 or line[k - 1] in " \t") and (ch == "#" or line.startswith(ch * 2, k)):
            return line[:k]
        else:
            k += 1


def code_hash(lines: "tuple[str, ...] | list[str]", path: str,
              code_of: "list[tuple[int, str]] | None" = None) -> str:
    """The hash of the file's code: unchanged by comment and whitespace edits."""
    code = code_of if code_of is not None else code_lines(lines, path)
    return _digest(text for _, text in code)


def definitions_of(lines: "tuple[str, ...] | list[str]", path: str,
                   code_of: "list[tuple[int, str]] | None" = None) -> dict[str, str]:
    """{name: short hash of its code} for the file's definitions (symbols.outline), in file
    order; a name defined again is `name#2`, `name#3`... `code_of`: code_lines, if known."""
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    code = dict(code_of if code_of is not None else code_lines(lines, path))
    for name, first, last in definitions(lines, path):
        seen[name] = seen.get(name, 0) + 1
        key = name if seen[name] == 1 else f"{name}#{seen[name]}"
        out[key] = _digest(code[n] for n in range(first, last + 1) if n in code)[:_SHORT]
    return out


def outline(defined: dict[str, str]) -> str:
    """`name:hash name:hash …` (definitions_of), ending with CUT when MAX_OUTLINE could not
    hold them all."""
    out: list[str] = []
    size = 0
    for name, digest in defined.items():
        entry = f"{name}:{digest}"
        if size + len(entry) + 1 > MAX_OUTLINE - len(CUT) - 1:
            out.append(CUT)
            break
        out.append(entry)
        size += len(entry) + 1
    return " ".join(out)


def parse_outline(text: str) -> tuple[dict[str, str], bool]:
    """{name: short hash} of a stored outline, and whether it named every definition."""
    entries: dict[str, str] = {}
    complete = True
    for entry in text.split(" "):
        if entry == CUT:
            complete = False
            continue
        name, _, digest = entry.rpartition(":")
        if name and digest:
            entries[name] = digest
    return entries, complete


def compare(old: str, now: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """The definitions changed, removed and added between a stored outline and the file's
    definitions now (added only when the stored outline named every definition)."""
    before, complete = parse_outline(old)
    changed = [n for n, h in before.items() if n in now and now[n] != h]
    removed = [n for n in before if n not in now]
    added = [n for n in now if n not in before] if complete else []
    return changed, removed, added


def _digest(parts: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode("utf-8", errors="surrogatepass")).hexdigest()
