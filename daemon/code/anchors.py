"""Anchoring a memory to the code it cites, and checking later what became of that code.

capture() records what a citation saw (core/anchors.py's Anchor); check() compares it with
the workspace now, cheaply: a stat() first (an unchanged size and mtime means fresh, nothing
read), the file's hash next, and only then the cited lines or symbol, looked for where they
were, elsewhere in the file, or in the file git says it was renamed to. A whole file is
compared by its code (fingerprint.py): a comment or whitespace edit leaves it fresh; a code
edit is named by the definitions it touched and, when git still holds the file as the memory
saw it, by a diff.
"""
import dataclasses
import hashlib
import threading

from ..core.anchors import MAX_ANCHOR_TEXT, MAX_ANCHORS, Anchor, AnchorCheck
from .diffs import sizes, summary
from .files import (
    AnchorError,
    FileCache,
    FileMissing,
    NotRegular,
    Source,
    clean_path,
    lines_hash,
    read_source,
)
from .fingerprint import code_hash, code_lines, compare, definitions_of, outline
from .git import Repo
from .mentions import Mention, find_mentions
from .symbols import NAME, find_definitions

__all__ = ["AnchorError", "FileCache", "Mention", "anchors_from_content", "capture", "check",
           "find_mentions"]

MAX_DIFF_LINES = 400          # lines of the code now compared with the old text
SEARCH_BUDGET = 8 << 20       # characters hashed looking for moved lines without their text
_RECEIVERS = ("self.", "this.", "cls.")


# -- capture ----------------------------------------------------------------------------------

def capture(workspace: str, path: str, start: int = 0, end: int = 0, symbol: str = "", *,
            auto: bool = False, repo: Repo | None = None) -> Anchor:
    """An anchor of `path` (whole), of lines start..end, or of `symbol`'s definition (the
    symbol wins over lines). Raises AnchorError, in words a model can act on."""
    src = read_source(workspace, clean_path(path))
    return _capture(src, start, end, symbol, auto, repo.head if repo is not None else "")


def anchors_from_content(workspace: str, content: str,
                         repo: Repo | None = None) -> list[Anchor]:
    """The citations in a memory's text that name code in the workspace, anchored; the
    others (not every path-like word is a file here) are skipped silently."""
    out: list[Anchor] = []
    for mention in find_mentions(content):
        try:
            anchor = capture(workspace, mention.path, mention.start, mention.end,
                             mention.symbol, auto=True, repo=repo)
        except AnchorError:
            if not mention.symbol:
                continue
            try:  # a name not defined there: the file is still cited
                anchor = capture(workspace, mention.path, auto=True, repo=repo)
            except AnchorError:
                continue
        if all(a.where != anchor.where for a in out):
            out.append(anchor)
    precise = {a.path for a in out if a.start or a.symbol}
    return [a for a in out if a.start or a.symbol or a.path not in precise][:MAX_ANCHORS]


def _capture(src: Source, start: int, end: int, symbol: str, auto: bool,
             commit: str) -> Anchor:
    if symbol:
        name = symbol_name(symbol)
        spans = _definitions(src, name, None)
        if not spans:
            raise AnchorError(f"no function or class named `{name}` in {src.path}")
        return _anchor(src, spans[0][0] + 1, spans[0][1] + 1, name, auto, commit)
    if start or end:
        first, last = _line_range(src, start, end)
        return _anchor(src, first, last, "", auto, commit)
    return _whole(src, commit, auto, None)


def _whole(src: Source, commit: str, auto: bool, cache: FileCache | None) -> Anchor:
    """A whole-file anchor: the file's identity, the hash of its code and its outline."""
    code = _code_lines(src, cache)
    return Anchor(path=src.path, lines_hash=code_hash(src.lines, src.path, code),
                  file_hash=src.file_hash, size=src.size, mtime_ns=src.mtime_ns,
                  commit=commit, auto=auto,
                  outline=outline(definitions_of(src.lines, src.path, code)))


def symbol_name(symbol: str) -> str:
    """`send()`, `self.send` → `send`; AnchorError when it is not a name at all."""
    name = symbol.strip().strip("`")
    if name.endswith("()"):
        name = name[:-2]
    for receiver in _RECEIVERS:
        if name.startswith(receiver):
            name = name[len(receiver):]
    if not NAME.match(name):
        raise AnchorError(f"`{symbol[:80]}` is not a function or class name; give a name "
                          "such as send or Client.send")
    return name


def _line_range(src: Source, start: int, end: int) -> tuple[int, int]:
    if start < 0 or end < 0 or (end and not start):
        raise AnchorError("line numbers start at 1; give the first cited line (and the last)")
    end = end or start
    if end < start:
        raise AnchorError(f"line range {start}-{end} is backwards; give the first line first")
    count = len(src.lines)
    for line in (start, end):
        if line > count:
            raise AnchorError(f"line {line} is past the end of {src.path} ({count} lines)")
    return start, end


def _anchor(src: Source, start: int, end: int, symbol: str, auto: bool,
            commit: str) -> Anchor:
    lines = src.lines[start - 1:end]
    text = "\n".join(lines)
    return Anchor(src.path, start, end, symbol, lines_hash(lines),
                  text if len(text) <= MAX_ANCHOR_TEXT else "", src.file_hash, src.size,
                  src.mtime_ns, commit, auto)


# -- check ------------------------------------------------------------------------------------

def check(workspace: str, anchor: Anchor, repo: Repo | None, cache: FileCache) -> AnchorCheck:
    """fresh, moved (with `now`, the anchor where the code is now), changed (with a short
    diff) or deleted. `now` is also set on a fresh anchor whose file changed elsewhere (or
    whose symbol moved within the file): re-anchoring to it keeps the next check cheap.
    `now` is None when it would equal the anchor (nothing to re-anchor)."""
    result = _check(workspace, anchor, repo, cache)
    if result.now is not None and result.now == anchor:
        return dataclasses.replace(result, now=None)
    return result


def _check(workspace: str, anchor: Anchor, repo: Repo | None,
           cache: FileCache) -> AnchorCheck:
    try:
        rel = clean_path(anchor.path)
        st = cache.stat(workspace, rel)
    except AnchorError as exc:
        return _failed(workspace, anchor, repo, cache, exc)
    if anchor.mtime_ns and st.st_size == anchor.size and st.st_mtime_ns == anchor.mtime_ns:
        return AnchorCheck(anchor, "fresh")
    try:
        src = cache.read(workspace, rel)
    except AnchorError as exc:
        return _failed(workspace, anchor, repo, cache, exc)
    commit = repo.head if repo is not None and repo.head else anchor.commit
    if src.file_hash == anchor.file_hash:
        return AnchorCheck(anchor, "fresh", now=_refreshed(anchor, src, commit))
    if not (anchor.start or anchor.symbol):
        return _compare_file(anchor, src, repo, commit, cache, renamed=False)
    return _compare(anchor, src, commit, cache, renamed=False)


def _failed(workspace: str, anchor: Anchor, repo: Repo | None, cache: FileCache,
            exc: AnchorError) -> AnchorCheck:
    """The state of an anchor whose file could not be stat()ed or read."""
    if isinstance(exc, FileMissing):
        return _gone(workspace, anchor, repo, cache)
    if isinstance(exc, NotRegular):
        return AnchorCheck(anchor, "deleted", detail=f"{exc}: the cited code is gone")
    return _unreadable(anchor, exc)


def _gone(workspace: str, anchor: Anchor, repo: Repo | None, cache: FileCache) -> AnchorCheck:
    """The cited file is not there: renamed (per git), or deleted."""
    new = repo.renamed(anchor.path, anchor.commit) if repo is not None else None
    if new is None:
        return AnchorCheck(anchor, "deleted", detail=f"{anchor.path} no longer exists "
                           f"(deleted {_since(anchor)}, not renamed): the cited code is gone")
    assert repo is not None
    try:
        src = cache.read(workspace, clean_path(new))
    except (FileMissing, NotRegular) as exc:
        return AnchorCheck(anchor, "deleted", detail=f"{anchor.path} was renamed to {new}, "
                           f"which is gone too ({exc})")
    except AnchorError as exc:
        return _unreadable(anchor, exc)
    commit = repo.head or anchor.commit
    if not (anchor.start or anchor.symbol):
        return _compare_file(anchor, src, repo, commit, cache, renamed=True)
    return _compare(anchor, src, commit, cache, renamed=True)


def _compare_file(anchor: Anchor, src: Source, repo: Repo | None, commit: str,
                  cache: FileCache, renamed: bool) -> AnchorCheck:
    """A whole file whose bytes changed (maybe under a new name): fresh (or moved) while its
    code is the same, else changed, saying which definitions changed and how."""
    also = f"{anchor.path} was renamed to {src.path} and " if renamed else ""
    now_hash = _code_hash(src, cache)
    change = _file_change(anchor, src, now_hash, repo, cache)
    if change is None:
        now = dataclasses.replace(_refreshed(anchor, src, commit), path=src.path,
                                  lines_hash=now_hash)
        if not anchor.outline:  # anchored by an older memnest: outline it now
            now = dataclasses.replace(now, outline=outline(definitions_of(
                src.lines, src.path, _code_lines(src, cache))))
        if renamed:
            return AnchorCheck(anchor, "moved", detail=f"{anchor.path} was renamed to "
                               f"{src.path}", now=now)
        return AnchorCheck(anchor, "fresh", now=now)
    what, diff = change
    return AnchorCheck(anchor, "changed", diff=diff,
                       now=_whole(src, commit, anchor.auto, cache) if renamed else None,
                       detail=f"{also}the code of {src.path} changed {_since(anchor)} "
                       f"({what}): verify before relying on this memory")


# What changed between two versions of a file, by (old bytes' hash, new bytes' hash, path):
# a changed file is checked on every recall, and git would run each time.
_CHANGES: dict[tuple[str | bool, ...], "tuple[str, str] | None"] = {}
_CHANGES_LOCK = threading.Lock()
MAX_CHANGES = 512


def _file_change(anchor: Anchor, src: Source, now_hash: str, repo: Repo | None,
                 cache: FileCache) -> tuple[str, str] | None:
    """None when the file's code is what the anchor saw; else (what changed, in words; a
    diff summary, "" without the old text)."""
    if anchor.lines_hash == now_hash:
        return None
    key = (anchor.file_hash, anchor.lines_hash + anchor.outline, anchor.path, anchor.commit,
           src.file_hash, src.path, repo is not None)
    with _CHANGES_LOCK:
        if key in _CHANGES:
            return _CHANGES[key]
    found = _file_change_uncached(anchor, src, now_hash, repo, _code_lines(src, cache))
    with _CHANGES_LOCK:
        if len(_CHANGES) >= MAX_CHANGES:
            _CHANGES.pop(next(iter(_CHANGES)))
        _CHANGES[key] = found
    return found


def _file_change_uncached(anchor: Anchor, src: Source, now_hash: str, repo: Repo | None,
                          now_code: list[tuple[int, str]]) -> tuple[str, str] | None:
    old = _old_lines(anchor, repo)
    old_code = code_lines(old, anchor.path) if old is not None else None
    old_hash, old_outline = anchor.lines_hash, anchor.outline
    if old is not None and not old_hash:  # an older memnest's anchor: fingerprint it now
        old_hash = code_hash(old, anchor.path, old_code)
        old_outline = outline(definitions_of(old, anchor.path, old_code))
    if old_hash == now_hash:
        return None
    if not old_hash:
        return ("the memory was anchored by an older memnest, which kept no fingerprint of "
                "the file's code; its bytes changed, maybe only in comments"), ""
    parts = _definitions_changed(old_outline, src, now_code)
    diff, line = _code_diff(old_code, now_code) if old_code is not None else ("", 0)
    if not parts:
        parts = ["code outside its functions and classes"]
    what = "; ".join(parts) + (f"; first change at line {line}" if line else "")
    return what, diff


def _definitions_changed(old_outline: str, src: Source,
                         code: list[tuple[int, str]]) -> list[str]:
    changed, removed, added = compare(old_outline, definitions_of(src.lines, src.path, code))
    out = []
    for label, names in (("changed", changed), ("removed", removed), ("added", added)):
        if names:
            shown = ", ".join(f"`{n}`" for n in names[:5])
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            out.append(f"{label}: {shown}{more}")
    return out


def _old_lines(anchor: Anchor, repo: Repo | None) -> tuple[str, ...] | None:
    """The file as the memory saw it, when the commit it was anchored at holds exactly
    those bytes (the file was committed then); None otherwise."""
    if repo is None or not anchor.commit or not anchor.file_hash:
        return None
    data = repo.file_at(anchor.commit, anchor.path)
    if data is None or hashlib.sha256(data).hexdigest() != anchor.file_hash:
        return None
    lines = data.decode("utf-8", errors="replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return tuple(line.rstrip() for line in lines)


def _code_diff(a: list[tuple[int, str]], b: list[tuple[int, str]]) -> tuple[str, int]:
    """A summary of the changed code lines from `a` to `b` (code_lines; the code before
    and after them in common left out, at most MAX_DIFF_LINES of each side), and the line
    number in the file now where they start."""
    head = 0
    while head < min(len(a), len(b)) and a[head][1] == b[head][1]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail][1] == b[-1 - tail][1]:
        tail += 1
    old_part = [t for _, t in a[head:len(a) - tail]][:MAX_DIFF_LINES]
    new_part = [t for _, t in b[head:len(b) - tail]][:MAX_DIFF_LINES]
    if head < len(b) - tail:
        line = b[head][0] + 1
    else:
        line = b[head - 1][0] + 2 if head else 1  # code removed: where it was
    return summary(old_part, new_part), line


def _code_lines(src: Source, cache: FileCache | None) -> list[tuple[int, str]]:
    if cache is None:
        return code_lines(src.lines, src.path)
    key = (src.path, src.file_hash)
    if key not in cache.code:
        cache.code[key] = code_lines(src.lines, src.path)
    return cache.code[key]


def _code_hash(src: Source, cache: FileCache | None) -> str:
    if cache is None:
        return code_hash(src.lines, src.path)
    key = (src.path, src.file_hash)
    if key not in cache.code_hashes:
        cache.code_hashes[key] = code_hash(src.lines, src.path, _code_lines(src, cache))
    return cache.code_hashes[key]


def _compare(anchor: Anchor, src: Source, commit: str, cache: FileCache,
             renamed: bool) -> AnchorCheck:
    """The cited lines or symbol in `src` (the file as it is now, maybe under a new name)."""
    spans = _definitions(src, anchor.symbol, cache) if anchor.symbol else []
    if anchor.symbol and not spans:
        where = f"{anchor.path} (renamed to {src.path})" if renamed else anchor.path
        return AnchorCheck(anchor, "deleted",
                           detail=f"`{anchor.symbol}` is no longer defined in {where}")
    same = _same_lines(anchor, src, spans)
    if same is not None:
        now = _anchor(src, same[0], same[1], anchor.symbol, anchor.auto, commit)
        if renamed:
            return AnchorCheck(anchor, "moved", now=now, detail=f"{anchor.path} was renamed "
                               f"to {src.path}; the cited code is unchanged, now at {now.where}")
        if anchor.symbol or same[0] == anchor.start:
            return AnchorCheck(anchor, "fresh", now=now)
        return AnchorCheck(anchor, "moved", now=now,
                           detail=f"the cited lines moved to {now.where}, unchanged")
    what = f"`{anchor.symbol}` in {src.path}" if anchor.symbol else \
        f"the cited lines of {src.path}"
    also = f"{anchor.path} was renamed to {src.path} and " if renamed else ""
    return AnchorCheck(anchor, "changed",
                       now=_renamed_to(anchor, src, spans, commit) if renamed else None,
                       diff=_diff(anchor, src, spans),
                       detail=f"{also}{what} changed {_since(anchor)}: verify before relying "
                       "on this memory")


def _same_lines(anchor: Anchor, src: Source,
                spans: list[tuple[int, int]]) -> tuple[int, int] | None:
    """The lines (1-based, inclusive) where the cited code is now, unchanged; None if
    nowhere: the symbol's definition nearest its old place, or a window of the cited length
    (where it was, else nearest there)."""
    if anchor.symbol:
        same = [s for s in spans if _hash(src, s[0], s[1]) == anchor.lines_hash]
        if not same:
            return None
        first, last = _closest(same, anchor.start)
        return first + 1, last + 1
    length = max(1, anchor.end - anchor.start + 1)
    if anchor.start >= 1 and anchor.end <= len(src.lines) and \
            _hash(src, anchor.start - 1, anchor.end - 1) == anchor.lines_hash:
        return anchor.start, anchor.end
    start = _find_window(anchor, src.lines, length)
    return (start, start + length - 1) if start is not None else None


def _find_window(anchor: Anchor, lines: tuple[str, ...], length: int) -> int | None:
    """Where `length` lines hashing as the anchor's are, nearest its old place first."""
    starts = sorted(range(len(lines) - length + 1), key=lambda i: abs(i - anchor.start + 1))
    if anchor.text:
        old = anchor.text.split("\n")
        for i in starts:
            if lines[i] == old[0] and list(lines[i:i + length]) == old and \
                    lines_hash(lines[i:i + length]) == anchor.lines_hash:
                return i + 1
        return None
    spent = 0
    for i in starts:  # no text kept: hash windows, within a budget
        window = lines[i:i + length]
        spent += sum(len(line) + 1 for line in window)
        if spent > SEARCH_BUDGET:
            return None
        if lines_hash(window) == anchor.lines_hash:
            return i + 1
    return None


def _diff(anchor: Anchor, src: Source, spans: list[tuple[int, int]]) -> str:
    """The old text against the code now: the symbol's body, or the lines at the old place
    (stretched to where the old last line is now, for lines inserted in between)."""
    if spans:
        first, last = _closest(spans, anchor.start)
    else:
        first = anchor.start - 1
        last = min(anchor.end, len(src.lines)) - 1
        if anchor.text:
            tail = next((t for t in reversed(anchor.text.split("\n")) if t.strip()), "")
            region = src.lines[first:last + 21]
            hits = [first + k for k, line in enumerate(region) if tail and line == tail]
            if hits:
                last = min(hits, key=lambda k: abs(k - last))
    new = src.lines[max(first, 0):max(first, 0) + min(last - first + 1, MAX_DIFF_LINES)]
    if not anchor.text:
        return sizes(anchor.end - anchor.start + 1, max(0, last - first + 1))
    return summary(anchor.text.split("\n"), new)


def _renamed_to(anchor: Anchor, src: Source, spans: list[tuple[int, int]],
                commit: str) -> Anchor:
    """Where a changed citation points in its renamed file: the symbol, the same line
    numbers (as many as the file still has), or the whole file."""
    if spans:
        first, last = _closest(spans, anchor.start)
        return _anchor(src, first + 1, last + 1, anchor.symbol, anchor.auto, commit)
    if 1 <= anchor.start <= len(src.lines):
        end = min(anchor.end, len(src.lines))
        return _anchor(src, anchor.start, end, "", anchor.auto, commit)
    return _whole(src, commit, anchor.auto, None)


def _refreshed(anchor: Anchor, src: Source, commit: str) -> Anchor:
    """The same citation with the file's new identity (the file changed only in its stat)."""
    return dataclasses.replace(anchor, file_hash=src.file_hash, size=src.size,
                               mtime_ns=src.mtime_ns, commit=commit)


def _definitions(src: Source, symbol: str, cache: FileCache | None) -> list[tuple[int, int]]:
    if cache is None:
        return find_definitions(src.lines, symbol, src.path)
    key = (src.path, src.file_hash, symbol)
    if key not in cache.symbols:
        cache.symbols[key] = find_definitions(src.lines, symbol, src.path)
    return cache.symbols[key]


def _hash(src: Source, first: int, last: int) -> str:
    return lines_hash(src.lines[first:last + 1])


def _closest(spans: list[tuple[int, int]], start: int) -> tuple[int, int]:
    return min(spans, key=lambda s: abs(s[0] + 1 - start))


def _since(anchor: Anchor) -> str:
    return f"since commit {anchor.commit[:7]}" if anchor.commit else \
        "since the memory was written"


def _unreadable(anchor: Anchor, exc: AnchorError) -> AnchorCheck:
    return AnchorCheck(anchor, "changed", detail=f"{anchor.path} can no longer be checked "
                       f"({exc}): verify before relying on this memory")
