"""Decide what a Cypher query may do before memory_query runs it.

The query is first cut into tokens the way LadybugDB's own lexer cuts it, so that a keyword
hidden in a comment, a string literal or a backtick-quoted name is not a keyword, and a keyword
the engine will see is never missed however it is spelt or spaced. The tokens are then
classified, statement by statement (`;`), and the query gets the worst class of its parts:

    read         nothing in the database changes
    write        adds data: CREATE, MERGE, nextval()
    destructive  deletes or overwrites data: DELETE, DETACH, SET, REMOVE, TRUNCATE,
                 COMMENT ON, and CALL of any procedure not known to be read-only
    forbidden    memory_query never runs it, whatever the settings: schema changes (CREATE
                 NODE/REL TABLE, GRAPH, SEQUENCE, MACRO, TYPE, CREATE OR REPLACE, ALTER,
                 DROP: the schema is the daemon's), file access (COPY, LOAD FROM, IMPORT /
                 EXPORT DATABASE, READ_CSV and the other file functions), the daemon's own
                 engine state (BEGIN, COMMIT, ROLLBACK, CHECKPOINT; ATTACH / USE of another
                 database; INSTALL / UNINSTALL / UPDATE / LOAD of an extension; configuration
                 calls like `CALL threads = 1`)

Lexical rules copied from the engine's grammar (and checked against it in the tests):
- `//` comments run to a line feed (optionally preceded by a carriage return) or the end of
  the text; a `//` followed by a lone carriage return and more text is not a comment at all
  but two `/` tokens (so `//*\\r*/` opens a block comment at the second slash).
- `/* */` comments do not nest; inside one, `*` pairs with the next character unless that is
  `/`, so `**/` does not close a comment but `***/` does. An unclosed `/*` is a `/` token.
- `--` is not a comment (it is two minus signs).
- strings are '...' or "..." with backslash escapes (\\\\ \\' \\" \\b \\f \\n \\r \\t \\xHH \\uHHHH
  \\UHHHHHHHH); a doubled quote does not escape. Backtick names are `...` with `` for a
  backtick. An unterminated string or name, or an unknown escape, makes the whole query
  unreadable, and it is refused (the engine would reject it too).
- a keyword is a maximal run of ASCII letters, digits and underscores; every other character,
  including every Unicode space, ends it. A run that starts with a digit is a number followed
  by a name (`1DELETE` is `1` then DELETE, `1e5SET` is `1e5` then SET), so every suffix of such
  a run that starts with a letter is checked as well. Non-ASCII characters count as separators:
  that can only make the guard see more keywords than the engine does, never fewer.
"""
from dataclasses import dataclass, field

READ, WRITE, DESTRUCTIVE, FORBIDDEN = "read", "write", "destructive", "forbidden"
_RANK = {READ: 0, WRITE: 1, DESTRUCTIVE: 2, FORBIDDEN: 3}

# Table functions of real_ladybug 0.15.3 that only report (from `CALL show_functions()`).
# Left out on purpose: READ_CSV_*, READ_PARQUET, READ_NPY, READ_PANDAS, FILE_INFO (they read
# files or the daemon's own Python variables) and every standalone function (CLEAR_WARNINGS,
# PROJECT_GRAPH, PROJECT_GRAPH_CYPHER, DROP_PROJECTED_GRAPH...), which change state.
READ_PROCEDURES = frozenset({
    "BM_INFO", "CATALOG_VERSION", "CURRENT_SETTING", "DB_VERSION", "DISK_SIZE_INFO",
    "FSM_INFO", "PROJECTED_GRAPH_INFO", "SHOW_ATTACHED_DATABASES", "SHOW_CONNECTION",
    "SHOW_FUNCTIONS", "SHOW_GRAPHS", "SHOW_INDEXES", "SHOW_LOADED_EXTENSIONS", "SHOW_MACROS",
    "SHOW_OFFICIAL_EXTENSIONS", "SHOW_PROJECTED_GRAPHS", "SHOW_SEQUENCES", "SHOW_TABLES",
    "SHOW_WARNINGS", "STATS_INFO", "STORAGE_INFO", "TABLE_INFO",
})

_DESTRUCTIVE_WORDS = {
    "DELETE": "DELETE removes data",
    "DETACH": "DETACH (DELETE) removes nodes with their relationships",
    "SET": "SET overwrites property values",
    "REMOVE": "REMOVE erases property values",
    "TRUNCATE": "TRUNCATE empties a table",
}
_FORBIDDEN_WORDS = {
    "BEGIN": "transaction control (BEGIN) would break the daemon's own transactions",
    "COMMIT": "transaction control (COMMIT) would break the daemon's own transactions",
    "ROLLBACK": "transaction control (ROLLBACK) would break the daemon's own transactions",
    "CHECKPOINT": "CHECKPOINT is the daemon's job (it checkpoints after every write)",
    "FORCE": "FORCE CHECKPOINT is the daemon's job",
    "ATTACH": "ATTACH opens another database inside the daemon",
    "USE": "USE switches the daemon's connection to another database",
    "INSTALL": "INSTALL downloads an extension into the daemon",
    "UNINSTALL": "UNINSTALL removes an extension from the daemon",
    "UPDATE": "UPDATE (extension) changes the daemon's extensions",
}
_WRITE_WORDS = {"CREATE": "CREATE adds data", "MERGE": "MERGE may add data"}
# Schema and file access: the daemon owns the schema, and a table's `storage` option, a
# graph's name or COPY / LOAD FROM / EXPORT reach files anywhere on the machine.
_DDL_AFTER_CREATE = frozenset(("NODE", "REL", "RELATIONSHIP", "GRAPH", "INDEX", "SEQUENCE",
                               "MACRO", "TYPE", "EXTERNAL", "OR"))
_FORBIDDEN_ALWAYS = {
    "DROP": "DROP changes the schema, which belongs to the daemon",
    "ALTER": "ALTER changes the schema, which belongs to the daemon",
    "COPY": "COPY reads or writes files on the daemon's machine",
    "IMPORT": "IMPORT DATABASE reads files on the daemon's machine",
    "EXPORT": "EXPORT DATABASE writes files on the daemon's machine",
}
# Table functions that read files (or the daemon's own Python objects).
_FILE_FUNCTIONS = frozenset(("READ_CSV", "READ_CSV_PARALLEL", "READ_CSV_SERIAL",
                             "READ_PARQUET", "READ_NPY", "READ_PANDAS", "READ_JSON",
                             "FILE_INFO", "COPY_CSV", "COPY_PARQUET"))
_WRITE_FUNCTIONS = {"NEXTVAL": "nextval() advances a sequence"}


class GuardError(ValueError):
    """The query cannot be read the way the engine would read it; it is refused."""


@dataclass(frozen=True)
class Token:
    kind: str          # "word", "name" (backtick-quoted), "string", "number", "symbol"
    text: str          # word: upper case; name: unquoted; symbol: the character
    raw: str           # as written (a word's original case, for parameter names)
    start: int
    glued: bool = False  # a word touching a non-ASCII, non-space character


@dataclass
class Verdict:
    kind: str
    reasons: list[str] = field(default_factory=list)
    statements: int = 0
    # range() arguments, each an int, ("param", name) or None
    ranges: list[tuple] = field(default_factory=list)

    @property
    def mutates(self) -> bool:
        return self.kind != READ


def _is_word_char(ch: str) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_")


_ESCAPE_SIMPLE = set("\\'\"BbFfNnRrTt")
_HEX = set("0123456789abcdefABCDEF")


def _escape_length(text: str, i: int) -> int:
    """Length of the escape sequence starting with the backslash at i, or 0 if invalid."""
    nxt = text[i + 1:i + 2]
    if nxt in _ESCAPE_SIMPLE and nxt:
        return 2
    if nxt in ("x", "X") and len(text) >= i + 4 and set(text[i + 2:i + 4]) <= _HEX:
        return 4
    if nxt in ("u", "U"):
        if len(text) >= i + 10 and set(text[i + 2:i + 10]) <= _HEX:
            return 10
        if len(text) >= i + 6 and set(text[i + 2:i + 6]) <= _HEX:
            return 6
    return 0


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    n, i = len(text), 0
    while i < n:
        ch = text[i]
        if ch == "/" and text.startswith("//", i):
            i = _line_comment(text, i, tokens)
        elif ch == "/" and text.startswith("/*", i):
            i = _block_comment(text, i, tokens)
        elif ch in "'\"":
            i = _string(text, i, tokens)
        elif ch == "`":
            i = _quoted_name(text, i, tokens)
        elif _is_word_char(ch):
            i = _word(text, i, tokens)
        else:
            if ch.isascii() and not ch.isspace() and ch.isprintable():
                tokens.append(Token("symbol", ch, ch, i))
            i += 1  # whitespace, control and non-ASCII characters separate tokens
    return tokens


# Each lexer below reads the token starting at `i`, appends what it found to `tokens` and
# returns where the next token may start.

def _line_comment(text: str, i: int, tokens: list[Token]) -> int:
    n, j = len(text), i + 2
    while j < n and text[j] not in "\r\n":
        j += 1
    if j < n and text[j] == "\r":
        j += 1
    if j >= n:
        return n
    if text[j] == "\n":
        return j + 1
    tokens.append(Token("symbol", "/", "/", i))  # `//` + lone CR: not a comment
    return i + 1


def _block_comment(text: str, i: int, tokens: list[Token]) -> int:
    n, j = len(text), i + 2
    while j < n:
        if text[j] == "*":
            if j + 1 < n and text[j + 1] == "/":
                return j + 2
            j += 2
        else:
            j += 1
    # the engine lexes an unclosed `/*` as a slash and goes on
    tokens.append(Token("symbol", "/", "/", i))
    return i + 1


def _string(text: str, i: int, tokens: list[Token]) -> int:
    quote, n, j = text[i], len(text), i + 1
    while True:
        if j >= n:
            raise GuardError(f"unterminated string literal starting at offset {i}")
        if text[j] == "\\":
            length = _escape_length(text, j)
            if not length:
                raise GuardError(f"unknown escape sequence {text[j:j + 2]!r} in the "
                                 f"string literal starting at offset {i}")
            j += length
        elif text[j] == quote:
            break
        else:
            j += 1
    tokens.append(Token("string", text[i + 1:j], text[i:j + 1], i))
    return j + 1


def _quoted_name(text: str, i: int, tokens: list[Token]) -> int:
    j, parts = i, []
    while j < len(text) and text[j] == "`":
        end = text.find("`", j + 1)
        if end < 0:
            raise GuardError(f"unterminated backtick-quoted name starting at offset {i}")
        parts.append(text[j + 1:end])
        j = end + 1
    tokens.append(Token("name", "`".join(parts), text[i:j], i))
    return j


def _word(text: str, i: int, tokens: list[Token]) -> int:
    n, j = len(text), i
    while j < n and _is_word_char(text[j]):
        j += 1
    run = text[i:j]
    if run[0].isdigit():
        tokens.append(Token("number", run, run, i))
        # The engine ends the number where its grammar ends it and reads the rest as a
        # name; every place that could be is checked.
        for k in range(1, len(run)):
            if run[k].isalpha() or run[k] == "_":
                tokens.append(Token("word", run[k:].upper(), run[k:], i + k, True))
    else:
        glued = (i > 0 and not text[i - 1].isascii() and not text[i - 1].isspace()) or \
                (j < n and not text[j].isascii() and not text[j].isspace())
        tokens.append(Token("word", run.upper(), run, i, glued))
    return j


def _split(tokens: list[Token]) -> list[list[Token]]:
    statements: list[list[Token]] = []
    current: list[Token] = []
    for t in tokens:
        if t.kind == "symbol" and t.text == ";":
            if current:
                statements.append(current)
            current = []
        else:
            current.append(t)
    if current:
        statements.append(current)
    return statements


def _at(tokens: list[Token], i: int) -> Token | None:
    return tokens[i] if 0 <= i < len(tokens) else None


def _is(tok: Token | None, kind: str, text: str | None = None) -> bool:
    return tok is not None and tok.kind == kind and (text is None or tok.text == text)


def _range_argument(tokens: list[Token], i: int) -> tuple[object, int]:
    """One simple argument of range(): an integer literal (maybe negative) or a $parameter.
    Returns (value, index after it); value None when it is anything else."""
    sign = 1
    if _is(_at(tokens, i), "symbol", "-"):
        sign, i = -1, i + 1
    tok = _at(tokens, i)
    if tok is not None and _is(tok, "number") and tok.text.isdigit():
        nxt = _at(tokens, i + 1)
        if _is(nxt, "symbol", ",") or _is(nxt, "symbol", ")"):
            return sign * int(tok.text), i + 1
    if _is(tok, "symbol", "$") and sign == 1:
        name = _at(tokens, i + 1)
        nxt = _at(tokens, i + 2)
        if name is not None and name.kind in ("word", "name", "number") and \
                (_is(nxt, "symbol", ",") or _is(nxt, "symbol", ")")):
            return ("param", name.text if name.kind == "name" else name.raw), i + 2
    return None, i


def _classify_statement(stmt: list[Token], verdict: Verdict) -> str:
    worst = READ

    def mark(kind: str, reason: str) -> None:
        nonlocal worst
        if _RANK[kind] > _RANK[worst]:
            worst = kind
        if reason not in verdict.reasons:
            verdict.reasons.append(reason)

    for i, tok in enumerate(stmt):
        if tok.kind != "word":
            continue
        word, nxt = tok.text, _at(stmt, i + 1)
        if word in _FORBIDDEN_WORDS:
            mark(FORBIDDEN, _FORBIDDEN_WORDS[word])
        elif word in _FORBIDDEN_ALWAYS:
            mark(FORBIDDEN, _FORBIDDEN_ALWAYS[word])
        elif word == "CREATE" and nxt is not None and nxt.kind == "word" and \
                nxt.text in _DDL_AFTER_CREATE:
            mark(FORBIDDEN, f"CREATE {nxt.raw} changes the schema, which belongs to the daemon")
        elif word in _FILE_FUNCTIONS and not tok.glued:
            mark(FORBIDDEN, f"{tok.raw} reads files on the daemon's machine")
        elif word == "LOAD":
            if _is(nxt, "word", "FROM") or _is(nxt, "word", "WITH"):
                mark(FORBIDDEN, "LOAD FROM reads files on the daemon's machine")
            else:
                mark(FORBIDDEN, "LOAD (extension) loads native code into the daemon")
        elif word in _DESTRUCTIVE_WORDS:
            mark(DESTRUCTIVE, _DESTRUCTIVE_WORDS[word])
        elif word == "COMMENT" and _is(nxt, "word", "ON"):
            mark(DESTRUCTIVE, "COMMENT ON overwrites a table comment")
        elif word == "OR" and _is(nxt, "word", "REPLACE") and \
                _is(_at(stmt, i - 1), "word", "CREATE"):
            mark(DESTRUCTIVE, "CREATE OR REPLACE overwrites an existing definition")
        elif word in _WRITE_WORDS:
            mark(WRITE, _WRITE_WORDS[word])
        elif word in _WRITE_FUNCTIONS and _is(nxt, "symbol", "("):
            mark(WRITE, _WRITE_FUNCTIONS[word])
        elif word == "CALL":
            _classify_call(stmt, i, mark)
        elif word == "RANGE" and _is(nxt, "symbol", "(") and not tok.glued:
            args, j = [], i + 2
            while True:
                value, j = _range_argument(stmt, j)
                args.append(value)
                if _is(_at(stmt, j), "symbol", ","):
                    j += 1
                    continue
                break
            verdict.ranges.append(tuple(args))
    return worst


def _classify_call(stmt: list[Token], i: int, mark) -> None:
    name, after = _at(stmt, i + 1), _at(stmt, i + 2)
    if _is(name, "symbol", "{"):
        return  # a subquery: its own clauses are classified where they stand
    if name is None:
        mark(DESTRUCTIVE, "CALL without a procedure name")
        return
    shown = name.raw
    if _is(after, "symbol", "="):
        mark(FORBIDDEN, f"CALL {shown} = ... changes the daemon's engine settings")
    elif name.kind == "word" and not name.glued and name.text in READ_PROCEDURES \
            and _is(after, "symbol", "("):
        return
    else:
        mark(DESTRUCTIVE, f"CALL {shown}: not a procedure known to be read-only")


def classify(query: str) -> Verdict:
    """Classify a query; raises GuardError when it cannot be read like the engine reads it."""
    statements = _split(tokenize(query))
    verdict = Verdict(READ, statements=len(statements))
    for stmt in statements:
        kind = _classify_statement(stmt, verdict)
        if _RANK[kind] > _RANK[verdict.kind]:
            verdict.kind = kind
    return verdict


def range_size(args: tuple, params: dict) -> int | None:
    """How many elements range(*args) makes, when its arguments are known before running."""
    values = []
    for a in args:
        if isinstance(a, tuple):
            a = params.get(a[1])
        if isinstance(a, bool) or not isinstance(a, int):
            return None
        values.append(a)
    if len(values) == 2:
        values.append(1)
    if len(values) != 3 or values[2] == 0:
        return None
    start, stop, step = values
    count = (stop - start) // step + 1
    return max(0, count)
