"""Other memory servers' files: the official MCP memory server's JSON Lines knowledge graph
(entities with observations, relations between them) and a mem0 dump (what its get_all or
export returns: a list of memories, bare or under "results"). Each observation, relation or
memory is one piece, with the line it sits on; an entity's first piece is the one its
relations link to. A file that is not what its kind writes is refused whole, with why; a
memory or line in it of the wrong shape (a number where text goes, a list for an object,
nested deeper than the JSON reader goes) is left out with why, and the rest read."""
import dataclasses
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from .units import SourceFile, Unit, piece_tags, slug

MAX_OBSERVATIONS = 1000  # per entity
TOO_DEEP = "nested too deeply to read"
_ID_LINE = re.compile(r'"id"\s*:\s*"([^"\n]{1,100})"')
_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)  # linear: the parts cannot overlap
_BRACKET = re.compile(r'["\[\]{}]')

Skipped = dict[str, str]  # what was left out (the file and where in it) -> why


class NotThisKind(ValueError):
    """The file is not what the kind writes; the message says what is wrong."""


class _Malformed(ValueError):
    """One memory (one line) is not of the shape its kind writes; the message says why."""


def server_memory_units(source: SourceFile, max_chars: int, skipped: Skipped) -> list[Unit]:
    """@modelcontextprotocol/server-memory's memory.jsonl: each observation of an entity,
    and each relation, as a piece; a file with a line that is not JSON is refused, a line
    of the wrong shape left out (in `skipped`)."""
    units: list[Unit] = []
    first: dict[str, int] = {}  # entity name -> its first piece
    relations: list[tuple[int, str, str, str]] = []
    for number, record in _lines(source, skipped):
        try:
            kind = _text(record, "type", needed=True)
            if kind == "entity":
                name, made = _entity(source, number, record, max_chars)
                first.setdefault(name.lower(), len(units))
                units += made
            elif kind == "relation":
                a, b, how = (_text(record, k, needed=True) for k in ("from", "to",
                                                                    "relationType"))
                relations.append((number, a, b, how))
            else:
                raise _Malformed(f"type {kind!r} is neither entity nor relation")
        except _Malformed as why:
            skipped[f"{source.shown}:{number}"] = str(why)
    for number, a, b, how in relations:
        text = f"{_name(a)} {how.replace('_', ' ')} {_name(b)}"
        units.append(Unit(text[:max_chars], source, number, number, "general",
                          _tags("server-memory", "relation"),
                          links=tuple(("RELATED_TO", _key(x)) for x in (a, b))))
    # an entity is reached through its first piece, which links to what it relates to
    for name, n in first.items():
        if n < len(units):
            units[n] = dataclasses.replace(units[n], keys=(name,), links=tuple(
                ("RELATED_TO", _key(b)) for _, a, b, how in relations if _key(a) == name))
    return units


def _lines(source: SourceFile, skipped: Skipped) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(source.text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except RecursionError:
            skipped[f"{source.shown}:{number}"] = TOO_DEEP
            continue
        except json.JSONDecodeError as exc:
            raise NotThisKind(f"line {number} is not JSON ({exc.msg}); the memory server "
                              "writes one JSON object per line") from None
        if not isinstance(record, dict):
            skipped[f"{source.shown}:{number}"] = f"{_kind(record)}, not an object"
            continue
        yield number, record


def _entity(source: SourceFile, number: int, record: dict[str, Any],
            max_chars: int) -> tuple[str, list[Unit]]:
    name, kind = _name(_text(record, "name", needed=True)), _text(record, "entityType")
    if not name:
        raise _Malformed("no name")
    said = [o.strip() for o in _texts(record, "observations") if o.strip()]
    tags = _tags("server-memory", kind, name)
    texts = [f"{name}: {o}" for o in said[:MAX_OBSERVATIONS]] or \
        [f"{name} is a {kind}" if kind else name]
    return name, [Unit(t[:max_chars], source, number, number, "general", tags) for t in texts]


def mem0_units(source: SourceFile, max_chars: int, skipped: Skipped) -> list[Unit]:
    """A mem0 dump: a list of memories, or an object holding one under "results" (get_all,
    paginated or not) or "memories"; each item's `memory` (or `text`, `content`) a piece,
    tagged with its categories. An item of the wrong shape is left out (in `skipped`)."""
    try:
        items = _memory_list(source.text)
    except json.JSONDecodeError as exc:
        raise NotThisKind(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if items is None:
        raise NotThisKind("no list of memories in it (mem0 writes a list, or one under "
                          "\"results\")")
    lines = _id_lines(source.text)
    units = []
    for n, item in enumerate(items, 1):
        try:
            text, listed = _mem0_item(item)
        except _Malformed as why:
            skipped[f"{source.shown}, memory {n}"] = str(why)
            continue
        line = lines.get(str(item.get("id", "")), 1)
        units.append(Unit(text[:max_chars], source, line, line, "general",
                          _tags("mem0", *listed)))
    return units


def _mem0_item(item: object) -> tuple[str, list[str]]:
    """A mem0 memory's text and categories."""
    if not isinstance(item, dict):
        raise _Malformed(TOO_DEEP if item is _DEEP else f"{_kind(item)}, not an object")
    text = next((t for t in (_text(item, k) for k in ("memory", "text", "content")) if t), "")
    if not text:
        raise _Malformed("no text: memory, text and content are all missing or empty")
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise _Malformed(f"metadata is {_kind(metadata)}, not an object")
    return text, _texts(item, "categories") or _texts(metadata or {}, "categories")


def _id_lines(text: str) -> dict[str, int]:
    """The line each "id" is on, counted on from the one before (not again from the start
    of the text for each: quadratic in a dump of 40,000 memories)."""
    lines: dict[str, int] = {}
    line, at = 1, 0
    for m in _ID_LINE.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        lines[m.group(1)] = line
    return lines


# -- a mem0 dump, a memory at a time ---------------------------------------------------------

_DEEP: Any = object()  # a memory nested deeper than the JSON reader goes
_DECODER = json.JSONDecoder()


def _memory_list(text: str) -> list[Any] | None:
    """The document's list of memories: itself, or the list under "results" (else
    "memories"); None when it has none. Each memory is parsed on its own, so one nested too
    deeply for the JSON reader (which recurses) is _DEEP and the others are still read; the
    rest of the text is checked as json.loads would. Raises JSONDecodeError."""
    start = _space(text, 0)
    found: dict[str, list[Any]] = {}

    def member(key: str | None, at: int) -> int:
        if key in ("results", "memories") and text.startswith("[", at):
            items = found[key] = []
            return _walk(text, at, lambda _, i: _read(text, i, items))
        return _read(text, at, [])

    if text.startswith("[", start):
        items = found["list"] = []
        end = _walk(text, start, lambda _, i: _read(text, i, items))
    elif text.startswith("{", start):
        end = _walk(text, start, member)
    else:
        end = _read(text, start, [])
    if _space(text, end) != len(text):
        raise json.JSONDecodeError("extra data after the JSON value", text, end)
    return next((found[k] for k in ("list", "results", "memories") if k in found), None)


def _walk(text: str, at: int, read: Callable[[str | None, int], int]) -> int:
    """Each value of the list or object that opens at text[at] given to `read` (with its
    key, None in a list, and where it starts; `read` returns where it ends); returns where
    the list or object ends."""
    close = "]" if text[at] == "[" else "}"
    i = _space(text, at + 1)
    if text.startswith(close, i):
        return i + 1
    while True:
        key = None
        if close == "}":
            if not text.startswith('"', i):
                raise json.JSONDecodeError("expected a key in double quotes", text, i)
            key, i = _DECODER.raw_decode(text, i)
            i = _space(text, i)
            if not text.startswith(":", i):
                raise json.JSONDecodeError("expected ':'", text, i)
            i = _space(text, i + 1)
        i = _space(text, read(key, i))
        if text.startswith(close, i):
            return i + 1
        if not text.startswith(",", i):
            raise json.JSONDecodeError(f"expected ',' or '{close}'", text, i)
        i = _space(text, i + 1)


def _read(text: str, at: int, into: list[Any]) -> int:
    """The JSON value at text[at] added to `into` (_DEEP when nested deeper than the
    reader goes); returns where it ends."""
    try:
        value, end = _DECODER.raw_decode(text, at)
    except RecursionError:
        value, end = _DEEP, _deep_end(text, at)
    into.append(value)
    return end


def _deep_end(text: str, at: int) -> int:
    """Where the list or object that opens at text[at] closes, found in one pass without
    recursion (the reader refused it as too deep: it is left out, not read)."""
    depth, i = 0, at
    while (found := _BRACKET.search(text, i)) is not None:
        if found.group() == '"':
            string = _STRING.match(text, found.start())
            if string is None:
                break
            i = string.end()
            continue
        depth += 1 if found.group() in "[{" else -1
        i = found.end()
        if depth == 0:
            return i
    raise json.JSONDecodeError("the text ends inside a list or object", text, at)


def _space(text: str, at: int) -> int:
    """Where the JSON whitespace from text[at] on ends."""
    found = _SPACE.match(text, at)
    assert found is not None  # [ \t\n\r]* matches anywhere
    return found.end()


# -- fields ----------------------------------------------------------------------------------

def _text(record: dict[str, Any], key: str, needed: bool = False) -> str:
    """record[key], stripped: text, or missing (null) when not `needed`."""
    value = record.get(key)
    if isinstance(value, str) and (value.strip() or not needed):
        return value.strip()
    if value is None or isinstance(value, str):
        if needed:
            raise _Malformed(f"no {key}")
        return ""
    raise _Malformed(f"{key} is {_kind(value)}, not text")


def _texts(record: dict[str, Any], key: str) -> list[str]:
    """record[key]: a list of texts, or missing (null)."""
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Malformed(f"{key} is {_kind(value)}, not a list")
    wrong = next((v for v in value if not isinstance(v, str)), "")
    if not isinstance(wrong, str):
        raise _Malformed(f"{key} holds {_kind(wrong)}, not text")
    return value


def _kind(value: object) -> str:
    """What a JSON value is, in words: a number, a list..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return "a number" if isinstance(value, (int, float)) else "text" if isinstance(
        value, str) else "a list" if isinstance(value, list) else "an object"


def _name(value: str) -> str:
    """An entity's name as a person writes it: Orders_API -> Orders API."""
    return value.replace("_", " ").strip()


def _key(value: str) -> str:
    return _name(value).lower()


def _tags(*words: str) -> tuple[str, ...]:
    return piece_tags(slug(w) for w in words)
