"""Where a function or class is defined in a file, and how far its body goes.

Best effort by regular expressions, no parser: Python (`def`, `async def`, `class`; body by
indentation) and JavaScript/TypeScript (`function`, `class`, `const name = (...) =>`,
methods `name(...) {`, `export ...`) are meant to be right; Go, Rust, Java, C#, C/C++,
Kotlin, Swift, Ruby, PHP, shell are recognised by their usual definition lines. Brace
languages' bodies end where the braces balance (strings and comments skipped roughly);
anything else ends where the indentation comes back, at most FALLBACK_LINES lines.

A dotted name (`Client.send`) is looked up inside the body of the first part.
"""
import re
from collections.abc import Sequence
from functools import lru_cache

FALLBACK_LINES = 60
MAX_BODY_LINES = 5000      # a body is cut here: hashing a runaway "body" would cost
MAX_HEADER_LINES = 30      # a definition's header (parameters...) spans at most this
NAME = re.compile(r"[A-Za-z_$][\w$]{0,200}(?:\.[A-Za-z_$][\w$]{0,200}){0,3}\Z")

_W = r"[ \t]"
_MODS = r"(?:(?:export|default|declare|public|private|protected|static|async|readonly|" \
        r"override|abstract|get|set|final|virtual|inline|extern|unsafe|const|internal|" \
        r"sealed|open|suspend|operator|synchronized|native|pub(?:\([^)\n]*\))?)" + _W + "+)*"

# (pattern with {n} for the name, kind): "def" lines are definitions outright; "call" lines
# look like a call as much as a definition and count only when a body follows the
# parameters (`send(x) {` defines, `send(x);` calls). A line may be a whole hostile file:
# no two quantifiers side by side may take the same characters (`{W}*\*?{W}*` split a run
# of spaces every way: quadratic), so a failed match gives each character back once.
_PYTHON = [(r"{W}*(?:async{W}+def|def|class){W}+{n}(?![\w$])", "def")]
_SCRIPT = [
    (r"{W}*{M}function\b{W}*(?:\*{W}*)?{n}(?![\w$])", "def"),
    (r"{W}*{M}(?:class|interface|enum|type|namespace|module){W}+{n}(?![\w$])", "def"),
    (r"{W}*{M}(?:const|let|var){W}+{n}(?![\w$])", "def"),
    (r"{W}*{M}#?{n}{W}*(?::[^=\n]+)?={W}*(?:async\b{W}*)?(?:function\b|\([^)\n]*\){W}*"
     r"(?::[^=\n]+)?=>|[A-Za-z_$][\w$]*{W}*=>)", "def"),
    (r"{W}*['\"]?{n}['\"]?{W}*:{W}*(?:async\b{W}*)?(?:function\b|\([^)\n]*\){W}*=>)", "def"),
    (r"{W}*{M}\*?#?{n}{W}*(?:<[^>\n]*>{W}*)?\(", "call"),
]
_GO = [
    (r"func{W}+(?:\([^)\n]*\){W}*)?{n}(?![\w$])", "def"),
    (r"{W}*(?:type|var|const){W}+{n}(?![\w$])", "def"),
]
_RUST = [
    (r"{W}*{M}(?:extern{W}+\"[^\"\n]*\"{W}+)?fn{W}+{n}(?![\w$])", "def"),
    (r"{W}*{M}(?:struct|enum|trait|type|mod|union|static|const|macro_rules!){W}*{n}(?![\w$])",
     "def"),
    (r"{W}*impl(?:<[^>\n]*>)?{W}+(?:[\w:<>]+{W}+for{W}+)?{n}(?![\w$])", "def"),
]
_CLIKE = [
    # modifiers as words (not {M} then words: both took them, quadratic in their number)
    (r"{W}*(?:@[\w.]+(?:\([^)\n]*\))?{W}+)*(?:(?:pub\([^)\n]*\)|\w+){W}+)*"
     r"(?:class|interface|enum|struct|record|object|trait|protocol|extension|namespace)"
     r"{W}+{n}(?![\w$])", "def"),
    (r"{W}*{M}(?:fun|func|def|function|sub){W}+(?:<[^>\n]*>{W}*)?(?:[\w.]+\.)?{n}(?![\w$])",
     "def"),
    (r"{W}*(?:[\w@<>\[\],.*&:~?]+{W}+)*[*&]*(?:[\w:]+::)?~?{n}{W}*\(", "call"),
]
_RUBY = [(r"{W}*(?:def{W}+(?:self\.)?|class{W}+|module{W}+){n}(?![\w$?!])", "def")]
_SHELL = [(r"{W}*(?:function{W}+{n}|{n}{W}*\(\))", "def")]

_LANGUAGES = {
    "python": (_PYTHON, ("py", "pyi", "pyx")),
    "script": (_SCRIPT, ("js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "vue",
                         "svelte")),
    "go": (_GO, ("go",)),
    "rust": (_RUST, ("rs",)),
    "clike": (_CLIKE, ("java", "kt", "kts", "scala", "groovy", "cs", "fs", "c", "h", "cc",
                       "cpp", "cxx", "hpp", "hh", "hxx", "swift", "dart", "php", "m", "mm",
                       "lua")),
    "ruby": (_RUBY, ("rb",)),
    "shell": (_SHELL, ("sh", "bash", "zsh")),
}
_BY_EXTENSION = {ext: lang for lang, (_, exts) in _LANGUAGES.items() for ext in exts}
_ALL = ("python", "script", "go", "rust", "clike", "ruby", "shell")
_QUOTES = {"python": "'\"", "script": "'\"`", "go": "'\"`", "rust": "\"", "clike": "'\"",
           "ruby": "'\"", "shell": "'\""}


def language(path: str) -> str:
    """The language a file's extension says ("" when unknown: every language is tried)."""
    name = path.rsplit("/", 1)[-1]
    return _BY_EXTENSION.get(name.rsplit(".", 1)[-1].lower(), "") if "." in name else ""


@lru_cache(maxsize=512)
def _patterns(lang: str, name: str) -> tuple[tuple[re.Pattern[str], str, str], ...]:
    out = []
    for each in ((lang,) if lang else _ALL):
        for template, kind in _LANGUAGES[each][0]:
            source = template.replace("{W}", _W).replace("{M}", _MODS)
            out.append((re.compile(source.replace("{n}", re.escape(name))), kind, each))
    return tuple(out)


def find_definitions(lines: "tuple[str, ...] | list[str]", symbol: str,
                     path: str) -> list[tuple[int, int]]:
    """Every definition of `symbol` in the file: (first line, last line), 0-based inclusive,
    in file order. [] when there is none."""
    lang = language(path)
    ranges = [(0, len(lines))]
    for part in symbol.split("."):
        found: list[tuple[int, int]] = []
        for lo, hi in ranges:
            found += _definitions_in(lines, part, lang, lo, hi)
        if not found:
            return []
        ranges = [(start + 1, end + 1) for start, end in found]
    return sorted(set(found))


def _definitions_in(lines: Sequence[str], name: str, lang: str, lo: int,
                    hi: int) -> list[tuple[int, int]]:
    word = re.compile(r"(?<![\w$])" + re.escape(name) + r"(?![\w$])")
    patterns = _patterns(lang, name)
    strong: list[tuple[int, int]] = []
    weak: list[tuple[int, int]] = []
    for i in range(lo, hi):
        line = lines[i]
        if name not in line or not word.search(line):
            continue  # most lines: one substring test
        for pattern, kind, each in patterns:
            if not pattern.match(line):
                continue
            if kind == "call":
                if _body_follows(lines, i, line.index(name) + len(name), each):
                    weak.append((i, _extent(lines, i, each)))
            else:
                strong.append((i, _extent(lines, i, each)))
            break
    return strong or weak


def _body_follows(lines: Sequence[str], i: int, column: int, lang: str) -> bool:
    """After the parameters of a call-like line comes a body `{` (a definition) rather
    than `;`, an operator or the end of a statement (a call)."""
    text = "\n".join(lines[i:i + MAX_HEADER_LINES])
    at = text.find("(", column)
    depth = 0
    for k in range(at, min(len(text), at + 4000)):
        ch = text[k]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                rest = text[k + 1:k + 400]
                brace = rest.find("{")
                return brace >= 0 and not re.search(r"[;}=]|=>", rest[:brace]) and \
                    re.match(r"\s*(?:[:\-]|throws\b|const\b|noexcept\b|override\b|where\b|"
                             r"\{|$)", rest) is not None
    return False


def _extent(lines: Sequence[str], i: int, lang: str) -> int:
    if lang == "python" or (lang != "script" and lines[i].rstrip().endswith(":")):
        return _indented_extent(lines, i, python=True)
    end = _brace_extent(lines, i, _QUOTES.get(lang, "'\""))
    return end if end is not None else _indented_extent(lines, i, python=False)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _indented_extent(lines: Sequence[str], i: int, python: bool) -> int:
    """The last line of a body that is indented deeper than its definition (Python, and the
    fallback): after the header's brackets close; blank and comment lines inside count,
    triple-quoted strings are read through whatever their indentation."""
    n = len(lines)
    cap = n if python else min(n, i + FALLBACK_LINES)
    cap = min(cap, i + MAX_BODY_LINES)
    indent = _indent(lines[i])
    j, depth = i, 0
    while j < cap:  # the header: until its brackets balance
        depth += _bracket_balance(lines[j])
        if depth <= 0 or j - i >= MAX_HEADER_LINES:
            break
        j += 1
    last = min(j, n - 1)
    in_string = False
    for k in range(last + 1, cap):
        line = lines[k]
        stripped = line.strip()
        if in_string:
            last = k
        elif stripped and not stripped.startswith("#"):
            if _indent(line) <= indent:
                if not python and stripped in ("end", "}", "};", "end)", "fi", "done"):
                    last = k  # a block's closing line belongs to it
                break
            last = k
        if (line.count('"""') + line.count("'''")) % 2:
            in_string = not in_string
    return last


def _bracket_balance(line: str) -> int:
    code = line.split("#", 1)[0]
    return sum(code.count(c) for c in "([{") - sum(code.count(c) for c in ")]}")


_CHAR = re.compile(r"'(?:\\.|[^\\'])'")
_CONTINUES = re.compile(r"\s*(?:\{|\.|\)|=>|->|:|extends\b|implements\b|where\b|throws\b|"
                        r"with\b|requires\b)")


def _brace_extent(lines: Sequence[str], i: int, quotes: str) -> int | None:
    """The line where the body's braces balance, the line of a `;` ending a bodiless
    declaration, or None when no body starts (the caller falls back to indentation)."""
    n = len(lines)
    parens = braces = 0
    opened = in_comment = False
    for j in range(i, min(n, i + MAX_BODY_LINES)):
        line = lines[j]
        k = 0
        while k < len(line):
            ch = line[k]
            if in_comment:
                end = line.find("*/", k)
                if end < 0:
                    break
                in_comment, k = False, end + 2
                continue
            if line.startswith("//", k):
                break
            if line.startswith("/*", k):
                in_comment, k = True, k + 2
                continue
            if ch in quotes:
                k = _string_end(line, k)
                continue
            if ch == "'":  # where ' is no quote (Rust lifetimes), still skip a char '{'
                char = _CHAR.match(line, k)
                if char is not None:
                    k = char.end()
                    continue
            if ch in "([":
                parens += 1
            elif ch in ")]":
                parens -= 1
            elif ch == "{" and (opened or parens <= 0):
                opened, braces = True, braces + 1
            elif ch == "}" and opened:
                braces -= 1
                if braces == 0:
                    return j
            elif ch == ";" and not opened and parens <= 0:
                return j
            k += 1
        if not opened and parens <= 0 and not in_comment and not _continued(lines, j):
            return j  # `const MAX = 3`, `type Id int`: a definition without a body
    return min(n, i + MAX_BODY_LINES) - 1 if opened else None


def _continued(lines: Sequence[str], j: int) -> bool:
    """Whether the header goes on after line j (an operator at its end, or the next line
    starting with `{`, `extends`, `->`...)."""
    line = lines[j].rstrip()
    if line.endswith((",", "(", "=", "=>", ":", "|", "&", "+", "-", "?", "<", "\\")):
        return True
    for k in range(j + 1, min(len(lines), j + 3)):
        if lines[k].strip():
            return _CONTINUES.match(lines[k]) is not None
    return False


def _string_end(line: str, k: int) -> int:
    """The index just after the string literal starting at line[k] (or the line's end)."""
    quote = line[k]
    k += 1
    while k < len(line):
        if line[k] == "\\":
            k += 2
            continue
        if line[k] == quote:
            return k + 1
        k += 1
    return k


# -- every definition, for a whole file's outline ----------------------------------------------

MAX_OUTLINED = 400         # definitions outlined per file; the rest are not named
_PY_DEF = re.compile(r"([ \t]*)(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w{0,200})")
_TOP_DEF = re.compile(
    r"(?:export[ \t]+(?:default[ \t]+)?)?" + _MODS +
    r"(?:function\b(?:[ \t]*\*)?|class|interface|enum|struct|trait|type|fn|def|sub|module|"
    r"namespace|object|record|protocol|func(?:[ \t]*\([^)\n]{0,200}\))?|"
    r"impl(?:<[^>\n]{0,200}>)?|const|let|var|static)[ \t]+([A-Za-z_$][\w$]{0,200})")
_CLOSER = re.compile(r"[})\]]|end\b|fi\b|done\b|esac\b")


def outline(lines: "tuple[str, ...] | list[str]",
            path: str) -> list[tuple[str, int, int]]:
    """The file's definitions as (name, first line, last line), 0-based inclusive, in file
    order: those whose line starts with the definition and, in Python, the methods of those
    classes (`Client.send`). A definition runs until the next line as little indented that
    is neither blank, a comment nor a closing bracket: one pass over the file, whatever it
    holds (the brace counting of find_definitions could be made to rescan). [] for a
    language not known by its extension; at most MAX_OUTLINED."""
    lang = language(path)
    if not lang:
        return []
    python = lang == "python"
    starts: list[tuple[str, int]] = []
    for i, line in enumerate(lines):
        if not line or line[0] in " \t":
            continue
        found = _PY_DEF.match(line) if python else _TOP_DEF.match(line)
        if found is not None and not (python and found.group(1)):
            starts.append((found.group(found.lastindex or 1), i))
        elif not line.startswith(("#", "//", "/*", "*")) and not _CLOSER.match(line):
            starts.append(("", i))  # other top-level code ends the definition before it
        if len(starts) > 4 * MAX_OUTLINED:
            break
    out: list[tuple[str, int, int]] = []
    for k, (name, first) in enumerate(starts):
        if not name:
            continue
        last = _last_code(lines, first, starts[k + 1][1] if k + 1 < len(starts) else len(lines))
        out.append((name, first, last))
        if python and lines[first].startswith("class"):
            out += _methods(lines, name, first + 1, last)
        if len(out) >= MAX_OUTLINED:
            break
    return out[:MAX_OUTLINED]


def _last_code(lines: Sequence[str], first: int, stop: int) -> int:
    """The last non-blank line before `stop` (at least `first`)."""
    last = stop - 1
    while last > first and not lines[last].strip():
        last -= 1
    return last


def _methods(lines: Sequence[str], owner: str, lo: int, hi: int) -> list[tuple[str, int, int]]:
    """The defs one level inside a Python class body (lines lo..hi), each running until
    the next line as little indented."""
    starts: list[tuple[str, int]] = []
    depth = None
    for k in range(lo, hi + 1):
        line = lines[k]
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(line) - len(stripped)
        if depth is None:
            depth = indent
        if indent > depth:
            continue
        found = _PY_DEF.match(line)
        starts.append((found.group(2) if found is not None and indent == depth else "", k))
        if len(starts) > 4 * MAX_OUTLINED:
            break
    out = []
    for n, (name, first) in enumerate(starts):
        if name:
            stop = starts[n + 1][1] if n + 1 < len(starts) else hi + 1
            out.append((f"{owner}.{name}", first, _last_code(lines, first, stop)))
    return out
