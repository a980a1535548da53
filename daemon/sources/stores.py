"""Other memory servers' files: the official MCP memory server's JSON Lines knowledge graph
(entities with observations, relations between them) and a mem0 dump (what its get_all or
export returns: a list of memories, bare or under "results"). Each observation, relation or
memory is one piece, with the line it sits on; an entity's first piece is the one its
relations link to. A file that is not what its kind writes is refused whole, with why."""
import dataclasses
import json
import re
from collections.abc import Iterator
from typing import Any

from .units import SourceFile, Unit, piece_tags, slug

MAX_OBSERVATIONS = 1000  # per entity
_ID_LINE = re.compile(r'"id"\s*:\s*"([^"\n]{1,100})"')


class NotThisKind(ValueError):
    """The file is not what the kind writes; the message says what is wrong."""


def server_memory_units(source: SourceFile, max_chars: int) -> list[Unit]:
    """@modelcontextprotocol/server-memory's memory.jsonl: each observation of an entity,
    and each relation, as a piece; lines that are not JSON objects are refused."""
    units: list[Unit] = []
    first: dict[str, int] = {}  # entity name -> its first piece
    relations: list[tuple[int, str, str, str]] = []
    for number, record in _lines(source):
        kind = record.get("type")
        if kind == "entity":
            first.setdefault(_key(record.get("name")), len(units))
            units += _entity(source, number, record, max_chars)
        elif kind == "relation":
            relations.append((number, _text(record.get("from")), _text(record.get("to")),
                              _text(record.get("relationType"))))
    for number, a, b, how in relations:
        if not (a and b and how):
            continue
        text = f"{_name(a)} {how.replace('_', ' ')} {_name(b)}"
        units.append(Unit(text[:max_chars], source, number, number, "general",
                          _tags("server-memory", "relation"),
                          links=tuple(("RELATED_TO", _key(x)) for x in (a, b))))
    # an entity is reached through its first piece, which links to what it relates to
    for name, n in first.items():
        if n < len(units):
            units[n] = dataclasses.replace(units[n], keys=(name,), links=tuple(
                ("RELATED_TO", _key(b)) for _, a, b, how in relations
                if _key(a) == name and b and how))
    return units


def _lines(source: SourceFile) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in enumerate(source.text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise NotThisKind(f"line {number} is not JSON ({exc.msg}); the memory server "
                              "writes one JSON object per line") from None
        if not isinstance(record, dict):
            raise NotThisKind(f"line {number} is not a JSON object")
        yield number, record


def _entity(source: SourceFile, number: int, record: dict[str, Any],
            max_chars: int) -> list[Unit]:
    name, kind = _name(_text(record.get("name"))), _text(record.get("entityType"))
    if not name:
        return []
    tags = _tags("server-memory", kind, name)
    said = [o for o in record.get("observations") or [] if isinstance(o, str) and o.strip()]
    texts = [f"{name}: {o.strip()}" for o in said[:MAX_OBSERVATIONS]] or \
        [f"{name} is a {kind}" if kind else name]
    return [Unit(t[:max_chars], source, number, number, "general", tags) for t in texts]


def mem0_units(source: SourceFile, max_chars: int) -> list[Unit]:
    """A mem0 dump: a list of memories, or an object holding one under "results" (get_all,
    paginated or not) or "memories"; each item's `memory` (or `text`, `content`) a piece,
    tagged with its categories."""
    try:
        doc = json.loads(source.text)
    except json.JSONDecodeError as exc:
        raise NotThisKind(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    items = doc if isinstance(doc, list) else next(
        (doc[k] for k in ("results", "memories") if isinstance(doc, dict) and
         isinstance(doc.get(k), list)), None)
    if items is None:
        raise NotThisKind("no list of memories in it (mem0 writes a list, or one under "
                          "\"results\")")
    lines = _id_lines(source.text)
    units = []
    for item in items:
        if not isinstance(item, dict):
            continue
        text = next((item[k] for k in ("memory", "text", "content")
                     if isinstance(item.get(k), str) and item[k].strip()), "")
        if not text:
            continue
        categories = item.get("categories") or (item.get("metadata") or {}).get("categories")
        listed = [c for c in categories if isinstance(c, str)] if isinstance(
            categories, list) else []
        line = lines.get(str(item.get("id", "")), 1)
        units.append(Unit(text.strip()[:max_chars], source, line, line, "general",
                          _tags("mem0", *listed)))
    return units


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


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _name(value: str) -> str:
    """An entity's name as a person writes it: Orders_API -> Orders API."""
    return value.replace("_", " ").strip()


def _key(value: object) -> str:
    return _name(_text(value)).lower()


def _tags(*words: str) -> tuple[str, ...]:
    return piece_tags(slug(w) for w in words)
