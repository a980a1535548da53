"""Citations of code in a memory's free text: `daemon/search.py`, `src/app.ts:120-140`,
`send()` in `client/http.py`, "the `send` function in client/http.py", and the path first:
client/http.py send(), `client/http.py` `send`, client/http.py: `send()`.

Only candidates: whether a file of that name exists is for the caller to find out. The work
is bounded (MAX_CONTENT characters looked at, tokens of at most MAX_TOKEN characters, no
regular expression that can backtrack over the whole text) because the text is the agent's.
"""
import re
from bisect import bisect_right
from dataclasses import dataclass

from ..core.anchors import MAX_ANCHORS

MAX_CONTENT = 20_000
MAX_TOKEN = 300
MAX_LINE = 10_000_000

# Extensions a bare file name (no folder) must have to be taken for a file: "search.py" is
# a citation, "e.g." or "v1.2" are not. With a folder, any extension starting with a letter.
SOURCE_EXTENSIONS = frozenset("""
    py pyi pyx ipynb js jsx mjs cjs ts tsx mts cts vue svelte go rs java kt kts scala groovy
    gradle c h cc cpp cxx hpp hh hxx cs fs fsx vb swift m mm rb php pl pm lua r jl ex exs erl
    hrl hs ml mli clj cljs dart zig nim sh bash zsh fish ps1 bat sql proto graphql gql toml
    yaml yml json jsonc ini cfg conf md rst txt html htm css scss sass less xml tf hcl cmake
    mk dockerfile lock env properties
""".split())

# Where a token ends: whitespace and the characters that wrap or separate citations in prose
# and markdown. `:` and `#` stay inside (line suffixes), `.` too (extensions).
_SPLIT = re.compile(r"[\s()\[\]{}<>\"'`,;|*]+")
_LINES = re.compile(r"(?::(\d{1,8})(?:-(\d{1,8}))?|#L(\d{1,8})(?:-L?(\d{1,8}))?)\Z")
_SEGMENT = re.compile(r"[\w@+\-][\w.@+\-]*|\.[\w.@+\-]+")
_EXTENSION = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,11})\Z")
_TRAILING = ".,:;!?…"

_NAME = r"[A-Za-z_$][\w$]{0,100}(?:\.[A-Za-z_$][\w$]{0,100}){0,3}"
# `send()` / `send` / send() [function|method|...] in [the file] [`]path: the name must be
# marked as code (backticks or parentheses), or "bug in x.py" would cite a symbol "bug".
_SYMBOL = re.compile(
    r"(?:`(?P<quoted>" + _NAME + r")(?:\(\))?`|(?<![\w.$`])(?P<called>" + _NAME + r")\(\))"
    r"(?:[ \t]+(?:function|method|class|def|fn|func|constructor|type|struct|helper))?"
    r"[ \t]+(?:in|of|from)[ \t]+(?:the[ \t]+file[ \t]+)?(?P<path>[`'\"]?[^\s`'\"]{1,300})")
# The path first: right after a cited file (its quote, a colon), a name marked as code.
# Matched only where a path token ends, so the work stays linear in the text.
_AFTER = re.compile(r"[`'\"]?:{0,2}[ \t]{1,8}(?:`(?P<quoted>" + _NAME + r")(?:\(\))?`|"
                    r"(?P<called>" + _NAME + r")\(\))")
_RECEIVERS = ("self.", "this.", "cls.")


@dataclass(frozen=True)
class Mention:
    path: str
    start: int = 0
    end: int = 0
    symbol: str = ""


def find_mentions(content: str) -> list[Mention]:
    """Candidate citations in `content`, in order of appearance, deduplicated, at most
    MAX_ANCHORS. A file also cited more precisely (lines, a symbol) is not cited whole."""
    text = content[:MAX_CONTENT] if isinstance(content, str) else ""
    found: list[tuple[int, Mention]] = []
    starts: list[int] = []   # the paths the symbol citations used (in order, disjoint)
    ends: list[int] = []
    names: set[int] = set()  # where their names end: not cited again after another path
    for match in _SYMBOL.finditer(text):
        mention = _symbol_mention(match, match.group("path"))
        if mention is not None:
            found.append((match.start(), mention))
            starts.append(match.start("path"))
            ends.append(match.end("path"))
            names.add(match.end("quoted") if match.group("quoted") else match.end("called"))
    position = 0
    for token in _SPLIT.split(text):
        if not token:
            continue
        start = text.find(token, position)
        position = start + len(token)
        used = bisect_right(starts, start) - 1
        if used >= 0 and start < ends[used]:
            continue  # the path of a symbol citation, already cited with its symbol
        mention = parse_citation(token)
        if mention is None:
            continue
        ends_sentence = token.endswith((".", "!", "?", ";", "…"))
        after = _AFTER.match(text, position) if not (mention.start or ends_sentence) else None
        if after is not None and after.end("quoted" if after.group("quoted") else "called") \
                not in names:
            mention = _symbol_mention(after, token) or mention
        found.append((start, mention))
    return _deduplicated([m for _, m in sorted(found, key=lambda f: f[0])])


def _symbol_mention(match: re.Match[str], path: str) -> Mention | None:
    name = match.group("quoted") or match.group("called") or ""
    for receiver in _RECEIVERS:
        if name.startswith(receiver):
            name = name[len(receiver):]
    cited = parse_citation(path.strip("`'\""))
    if cited is None or not name:
        return None
    return Mention(cited.path, symbol=name)


def parse_citation(token: str) -> Mention | None:
    """A path with an optional line suffix (`:12`, `:12-20`, `#L12-L20`), or None when the
    token is not one: a URL, an absolute path, `..`, no extension..."""
    token = token.strip("`'\"").rstrip(_TRAILING)
    if not token or len(token) > MAX_TOKEN or "://" in token or token.startswith(("/", "~")):
        return None
    start = end = 0
    lines = _LINES.search(token)
    if lines is not None:
        first, last = lines.group(1) or lines.group(3), lines.group(2) or lines.group(4)
        start = int(first)
        end = int(last) if last else start
        if not 0 < start <= MAX_LINE or end < start or end > MAX_LINE:
            start = end = 0
        token = token[:lines.start()]
    while token.startswith("./"):
        token = token[2:]
    parts = token.split("/")
    if any(not _SEGMENT.fullmatch(p) or p in (".", "..") for p in parts):
        return None
    extension = _EXTENSION.search(parts[-1])
    if extension is None or extension.start() == 0 and len(parts) == 1:
        return None  # "a/b", ".env" alone
    if len(parts) == 1 and extension.group(1).lower() not in SOURCE_EXTENSIONS:
        return None
    return Mention("/".join(parts), start, end)


def _deduplicated(mentions: list[Mention]) -> list[Mention]:
    precise = {m.path for m in mentions if m.start or m.symbol}
    out: list[Mention] = []
    for mention in mentions:
        if mention in out or (mention.path in precise and not (mention.start or mention.symbol)):
            continue
        out.append(mention)
        if len(out) == MAX_ANCHORS:
            break
    return out
