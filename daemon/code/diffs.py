"""A short summary of how cited lines changed, for a model to read in a search result:
"-2 +3 lines: `retries = 3` → `retries = 5`" (at most MAX_SUMMARY characters)."""
import difflib

MAX_SUMMARY = 200
_SHOWN = 60   # characters of one line quoted in a summary


def summary(old: "list[str] | tuple[str, ...]", new: "list[str] | tuple[str, ...]") -> str:
    """What changed from `old` to `new` (both lists of rstrip()ed lines); "" if nothing."""
    removed: list[str] = []
    added: list[str] = []
    matcher = difflib.SequenceMatcher(None, list(old), list(new), autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += old[a0:a1]
        if tag in ("replace", "insert"):
            added += new[b0:b1]
    if not removed and not added:
        return ""
    counts = " ".join(part for part in (f"-{len(removed)}" if removed else "",
                                        f"+{len(added)}" if added else "") if part)
    first_old = next((line for line in removed if line.strip()), "")
    first_new = next((line for line in added if line.strip()), "")
    if first_old and first_new:
        what = f"{_quoted(first_old)} → {_quoted(first_new)}"
    elif first_old:
        what = f"removed {_quoted(first_old)}"
    elif first_new:
        what = f"added {_quoted(first_new)}"
    else:
        what = "blank lines"
    return _cut(f"{counts} lines: {what}")


def sizes(old_count: int, new_count: int) -> str:
    """The summary when the old text was too long to keep: only the line counts."""
    return f"was {old_count} lines, now {new_count} (the old text was too long to keep)"


def _quoted(line: str) -> str:
    line = line.strip().replace("`", "'")
    return f"`{line[:_SHOWN - 1]}…`" if len(line) > _SHOWN else f"`{line}`"


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SUMMARY else text[:MAX_SUMMARY - 1] + "…"
