"""The admission of text: the one set of rules every way text enters a store goes through.

Tools (memory_store, memory_update), memory_import, teammates' shared files (team/sync.py),
raw memory_query writes (store/reconcile.py's cleaner), and through the tools the hooks and
the CLI all call this module, so that a rule added here holds everywhere at once:

- storable text: no NUL character, no unpaired UTF-16 surrogate (neither the tokenizer nor
  the database can take them);
- size: stripped, not empty, within the caller's limit (MEMORY_MAX_STORE_CHARS) before and
  after cleaning;
- privacy (privacy.py): `<private>…</private>` sections left out, secrets redacted;
- tags: a tag holding private text or a secret is dropped (a Topic named by a secret would
  only link unrelated memories), the rest normalised;
- injection screening (screening.py): the markers are found and reported, never used to
  alter or refuse the text.

A text that cannot be admitted raises `Refused` with one sentence naming `where` it was;
callers map it to their own error (a tool error, a file reported as unreadable).
"""
from collections.abc import Iterable
from dataclasses import dataclass

from ..core.records import normalise_tags
from . import privacy
from .screening import markers


class Refused(ValueError):
    """Why a text cannot be stored, as one sentence that begins with where it was."""


@dataclass(frozen=True, slots=True)
class Admitted:
    text: str                  # what may be stored
    note: str | None           # what privacy took out, for the caller; None when nothing
    markers: tuple[str, ...]   # injection screening markers found in the stored text


def check_storable(value: str, where: str) -> None:
    if "\x00" in value:
        raise Refused(f"{where}: contains a NUL character; remove it")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise Refused(f"{where}: contains an unpaired UTF-16 surrogate; send valid Unicode "
                      "text") from None


def admit(content: str, where: str, limit: int) -> Admitted:
    """The text to store (stripped, within `limit`, private sections left out, secrets
    redacted) with what was taken out and the screening markers. Its content hash is taken
    from this text, so the same text stored twice is one memory."""
    check_storable(content, where)
    text = content.strip()
    if not text:
        raise Refused(f"{where}: content is empty or only whitespace")
    if len(text) > limit:
        raise Refused(f"{where}: content is {len(text)} characters, over the limit of {limit} "
                      "(MEMORY_MAX_STORE_CHARS); split it into several memories")
    cleaned = privacy.clean(text)
    note = None
    if cleaned.changed:
        text = cleaned.text.strip()
        if not text:
            raise Refused(f"{where}: {privacy.NOTHING_LEFT}")
        if len(text) > limit:
            raise Refused(f"{where}: with its secrets redacted the content is {len(text)} "
                          f"characters, over the limit of {limit} (MEMORY_MAX_STORE_CHARS); "
                          "split it into several memories")
        note = cleaned.note()
    return Admitted(text, note, tuple(markers(text)))


def admit_tags(tags: Iterable[object] | None, where: str) -> tuple[list[str], str | None]:
    """The tags to keep (normalised) and a note when some were dropped for holding private
    text or a secret."""
    kept: list[object] = []
    dropped = 0
    for tag in tags or ():
        if isinstance(tag, str):
            check_storable(tag, f"{where}.tags")
        if isinstance(tag, str) and privacy.clean(tag).changed:
            dropped += 1
        else:
            kept.append(tag)
    note = f"{dropped} tag{'s' if dropped > 1 else ''} with private text or a secret left " \
           "out" if dropped else None
    return normalise_tags(kept), note


def raw(text: str) -> tuple[str, str | None]:
    """The privacy rules for a raw memory_query write, whose rows the store reconciles
    (store/reconcile.py's Cleaner): the text to keep and what was taken out."""
    cleaned = privacy.clean(text)
    return cleaned.text, cleaned.note()


def secrets_in(texts: Iterable[str]) -> list[str]:
    """The kinds of secret (and private sections) found in these texts: a memory holding
    any is not shared."""
    found: list[str] = []
    for text in texts:
        cleaned = privacy.clean(text)
        if cleaned.changed:
            found += list(cleaned.removed)
    return list(dict.fromkeys(found))
