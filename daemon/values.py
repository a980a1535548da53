"""What a memory asserts, as far as merging is concerned: its values (numbers, quantities,
identifiers) and its subject (the other content words).

"p95 is 500ms" and "p95 is 900ms" embed almost identically, yet merging them would destroy one
of two facts. Two memories that name different values never merge; two memories with the same
subject and different values disagree, and are flagged so an agent can decide.
"""
import re
from functools import lru_cache

# a token never ends in one of . - / : ("v2." and "v2" are one value)
_TOKEN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.\-/:%$€£]*[A-Za-z0-9_%$€£])?")
_HAS_DIGIT = re.compile(r"\d")
_STOPWORDS = frozenset("""
a an the and or but if then else of to in on at by for with from into onto over under about as
is are was were be been being am do does did has have had having will would shall should can
could may might must it its this that these those there here we you they he she i me my our
your their his her them us not no yes so than too very just also only now still all any each
every some such what which who whom whose when where why how up down out off again further
once more most other same own both few few per via
""".split())
_UNITS = {"milliseconds": "ms", "millisecond": "ms", "msec": "ms", "seconds": "s",
          "second": "s", "secs": "s", "sec": "s", "minutes": "min", "minute": "min",
          "mins": "min", "hours": "h", "hour": "h", "hrs": "h", "days": "d", "day": "d",
          "percent": "%", "gigabytes": "gb", "megabytes": "mb", "kilobytes": "kb"}
_UNIT_ABBREVIATIONS = frozenset(("ms", "s", "min", "h", "d", "%", "gb", "mb", "kb"))
_NUMBER_WITH_UNIT = re.compile(r"^(\d+(?:[.,]\d+)*)\s*([a-z%]*)$")


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text)]


def values(text: str) -> frozenset[str]:
    """Numbers (with their unit), versions, and identifiers that contain a digit."""
    if not _HAS_DIGIT.search(text):
        return frozenset()  # most texts: no need to split them into tokens
    return _assertion(text)[0]


def subject(text: str) -> frozenset[str]:
    """Content words that are not values: what the memory is about."""
    return _assertion(text)[1]


# Conflict checks compare the same memories again on every search that shows them
# (texts are at most MEMORY_MAX_STORE_CHARS, so the cache stays within tens of MB). Values
# and subject come from one split of the text into tokens.
@lru_cache(maxsize=4096)
def _assertion(text: str) -> tuple[frozenset[str], frozenset[str]]:
    tokens = _tokens(text)
    return (_values(tokens) if _HAS_DIGIT.search(text) else frozenset(),
            frozenset(t for t in tokens
                      if t not in _STOPWORDS and not t[0].isdigit() and t not in _UNITS
                      and t not in _UNIT_ABBREVIATIONS))


def _values(tokens: list[str]) -> frozenset[str]:
    found: set[str] = set()
    for i, token in enumerate(tokens):
        if not _HAS_DIGIT.search(token):
            continue
        match = _NUMBER_WITH_UNIT.match(token)
        if match and not match.group(2) and i + 1 < len(tokens):
            following = tokens[i + 1]
            unit = _UNITS.get(following,
                              following if following in _UNIT_ABBREVIATIONS else "")
            token = match.group(1) + unit
        elif match:
            token = match.group(1) + _UNITS.get(match.group(2), match.group(2))
        found.add(token.replace(",", ""))
    return frozenset(found)


def disagree(a: str, b: str) -> bool:
    """The two texts name different values (a number, quantity or identifier)."""
    return values(a) != values(b)


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def same_subject(a: str, b: str) -> bool:
    """The two texts are about the same thing. Values that differ between them are left out
    of the subject ("deploy to us-east-1" and "deploy to us-west-2" are both about
    deploying)."""
    differing = values(a) ^ values(b)
    return _overlap(subject(a) - differing, subject(b) - differing) >= 0.6


def value_disagreement(a: str, b: str) -> bool:
    """Same subject, different values: both cannot be current."""
    va, vb = values(a), values(b)
    return bool(va) and bool(vb) and va != vb and same_subject(a, b)


def tag_overlap(a: list[str], b: list[str]) -> float:
    """Jaccard overlap of two tag lists; two untagged memories overlap fully."""
    sa, sb = set(a), set(b)
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)
