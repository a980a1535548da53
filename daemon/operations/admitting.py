"""Text and tags of one call, admitted by curation/admission.py, with a record of what was
left out (private text, secrets) for the call's result."""
from __future__ import annotations

from typing import Any, Callable

from ..core.errors import invalid
from ..curation import admission


class LeftOut:
    """What curation/privacy.py took out of one call's texts, for the call's result: a note per
    item, keyed as errors name items ("items.3", "updates.0", "memories.12")."""

    MAX_SHOWN = 20

    def __init__(self) -> None:
        self.notes: dict[str, list[str]] = {}

    def add(self, where: str, note: str | None) -> None:
        if note:
            self.notes.setdefault(where, []).append(note)

    def report(self, single: bool) -> dict[str, Any]:
        """`privacy` for a result: the note alone for a one-item call, else the notes by item
        (the first MAX_SHOWN; `privacy_more` counts the rest). Empty when nothing was left
        out, so results without private text or secrets look as they always did."""
        if not self.notes:
            return {}
        notes = {where: "; ".join(parts) for where, parts in self.notes.items()}
        if single:
            return {"privacy": "; ".join(notes.values())}
        shown = dict(list(notes.items())[:self.MAX_SHOWN])
        out: dict[str, Any] = {"privacy": shown}
        if len(notes) > len(shown):
            out["privacy_more"] = len(notes) - len(shown)
        return out


def private_free(content: str, where: str, limit: int, left_out: LeftOut | None,
                 error: Callable[[str], Exception] = invalid) -> str:
    """The text to store, as curation/admission.py admits it (what was taken out goes to
    `left_out`); `error` makes the exception a refused text raises."""
    try:
        admitted = admission.admit(content, where, limit)
    except admission.Refused as exc:
        raise error(str(exc)) from None
    if left_out is not None:
        left_out.add(where, admitted.note)
    return admitted.text


def clean_tags(tags: list[str], where: str, left_out: LeftOut | None = None) -> list[str]:
    """The tags to keep, as curation/admission.py admits them."""
    try:
        kept, note = admission.admit_tags(tags, where)
    except admission.Refused as exc:
        raise invalid(str(exc)) from None
    if left_out is not None:
        left_out.add(where, note)
    return kept
