"""Whether a memory's code is still what it was: anchors taken when a memory is written, their
state when it is recalled, the branch it came from, and refreshing them once the agent has
confirmed the memory still holds.

The checks read only the files the anchors cite (a stat first: code/anchors.py); a search
checks the memories it is about to show, not the workspace.
"""
import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from ..code.anchors import AnchorError, FileCache, anchors_from_content, capture, check
from ..code.git import Repo
from ..core.anchors import (
    MAX_ANCHORS,
    NO_CODE,
    STALE_STATES,
    Anchor,
    AnchorCheck,
    AnchorState,
    AnchorView,
    CodeContext,
)
from ..core.errors import invalid
from ..core.records import Memory
from . import privacy

# Worst first: the state a memory shows is its worst anchor's.
_SEVERITY: dict[AnchorState, int] = {"deleted": 3, "changed": 2, "moved": 1, "fresh": 0}
STALE_FACTOR = 0.6          # a memory whose code changed or went ranks at this share
OTHER_BRANCH_FACTOR = 0.85  # one written on a branch not merged into this one
VERIFY = ("the code this memory cites has {what} since it was written: check the code "
          "before relying on it, then memory_update(id, refresh_anchors=true) if it still "
          "holds, or correct or delete it")


class OtherBranch(TypedDict):
    """A memory written on a branch this one has not merged."""
    written_on: str
    merged: bool
    note: str


class StaleEntry(AnchorView):
    """A stale anchor's memory, as memory_stale lists it under the anchor's file."""
    id: int
    content: str  # shortened


class StaleFile(TypedDict):
    path: str
    memories: list[StaleEntry]


# An anchor an agent gives: path, and lines ("12" or "12-20") or a symbol (tools' schema).
GivenAnchor = Mapping[str, str]


@dataclass
class Freshness:
    """What one memory's code looks like now."""
    checks: list[AnchorCheck] = field(default_factory=list)
    branch: OtherBranch | None = None   # set when written on a branch not in HEAD's history
    reanchored: CodeContext | None = None  # moved anchors re-captured where the code is now
    checked: CodeContext = NO_CODE      # the stored context these checks were made from

    @property
    def state(self) -> AnchorState | Literal[""]:
        """The worst anchor state, "" without anchors."""
        if not self.checks:
            return ""
        return max((c.state for c in self.checks), key=_SEVERITY.__getitem__)

    @property
    def stale(self) -> bool:
        return self.state in STALE_STATES

    @property
    def factor(self) -> float:
        factor = STALE_FACTOR if self.stale else 1.0
        return factor * (OTHER_BRANCH_FACTOR if self.branch else 1.0)

    def view(self) -> dict[str, object]:
        out: dict[str, object] = {}
        if self.checks:
            out["state"] = self.state
            out["anchors"] = [c.view() for c in self.checks]
            if self.stale:
                what = "changed" if self.state == "changed" else "been deleted"
                out["verify"] = VERIFY.format(what=what)
        if self.branch:
            out["branch"] = self.branch
        return out


# -- when a memory is written --------------------------------------------------------------------

def written_context(workspace: str, content: str, explicit: Sequence[GivenAnchor] | None,
                    auto: bool = True, keep: CodeContext | None = None,
                    where: str = "", worktree: str = "") -> CodeContext:
    """The code context of a memory being written: the anchors given (`explicit`, an error if
    one cannot be anchored), or else those `keep` already had, plus the citations found in
    the text when `auto`; and the branch and commit when the workspace is a git repository.
    `where` prefixes the argument path in errors (items.3.)."""
    repo = Repo.of(workspace)
    anchors: list[Anchor] = []
    if explicit is not None:
        for n, given in enumerate(explicit):
            anchor = _explicit(workspace, given, f"{where}anchors.{n}", repo)
            if all(a.where != anchor.where for a in anchors):
                anchors.append(anchor)
    elif keep is not None:
        anchors = [a for a in keep.anchors if not a.auto]
    if auto:
        for found in anchors_from_content(workspace, content, repo):
            if all(a.where != found.where for a in anchors):
                anchors.append(found)
    branch = repo.branch if repo else ""
    commit = repo.head if repo else ""
    return CodeContext(tuple(_without_secrets(a) for a in anchors[:MAX_ANCHORS]), branch,
                       commit, worktree)


def _without_secrets(anchor: Anchor) -> Anchor:
    """The cited lines are kept for a diff later, and travel with exports: lines holding a
    secret are not kept (the hash still tells when they change)."""
    if anchor.text and privacy.clean(anchor.text).changed:
        return dataclasses.replace(anchor, text="")
    return anchor


def _explicit(workspace: str, given: GivenAnchor, where: str, repo: Repo | None) -> Anchor:
    start, end = _lines(given.get("lines"), where)
    try:
        return capture(workspace, given["path"], start, end, given.get("symbol", ""),
                       repo=repo)
    except AnchorError as exc:
        raise invalid(f"{where}: {exc}") from None


def _lines(text: str | None, where: str) -> tuple[int, int]:
    if not text:
        return 0, 0
    first, _, last = text.partition("-")
    start, end = int(first), int(last or first)
    if start < 1 or end < start:
        raise invalid(f"{where}.lines: {text!r} is not a range like 12 or 12-20")
    return start, end


def merged(a: CodeContext, b: CodeContext) -> CodeContext:
    """The code context of a memory merged with another: the anchors of both, the older
    branch (where the memory was first written)."""
    if not b:
        return a
    if not a:
        return b
    anchors = list(a.anchors) + [x for x in b.anchors
                                 if all(y.where != x.where for y in a.anchors)]
    return CodeContext(tuple(anchors[:MAX_ANCHORS]), a.branch or b.branch,
                       a.commit or b.commit, a.worktree or b.worktree)


# -- when memories are recalled ------------------------------------------------------------------

def freshness(memories: list[Memory], checkouts: dict[str, str] | None = None
              ) -> dict[int, Freshness]:
    """The state of each memory's anchors and branch, for memories that have either (each
    checked in its own workspace: a global search shows several). `checkouts`: where a
    workspace's files are for this call (a worktree of its repository), by workspace."""
    found: dict[int, Freshness] = {}
    repos: dict[str, Repo | None] = {}
    cache = FileCache()
    for m in memories:
        context = m.code
        if not context:
            continue
        root = (checkouts or {}).get(m.workspace, m.workspace)
        if root not in repos:
            repos[root] = Repo.of(root)
        repo = repos[root]
        f = Freshness(checked=m.code)
        for anchor in context.anchors:
            f.checks.append(check(root, anchor, repo, cache))
        f.branch = _other_branch(context, repo)
        # Code that only moved (lines shifted, a file renamed) is re-anchored where it is now.
        # A write costs a checkpoint, so only a new place is written; a file edited elsewhere
        # is hashed again on each check instead, which costs far less
        # (bench/RESULTS.md#code-anchors).
        follow = [c.now if c.now is not None and c.state in ("moved", "fresh")
                  and c.now.where != c.anchor.where else c.anchor for c in f.checks]
        if any(a is not c.anchor for a, c in zip(follow, f.checks)):
            f.reanchored = dataclasses.replace(context, anchors=tuple(follow))
        if f.checks or f.branch:
            found[m.id] = f
    return found


def _other_branch(context: CodeContext, repo: Repo | None) -> OtherBranch | None:
    """A memory written on another branch whose commit HEAD's history does not contain."""
    if repo is None or not context.branch or not context.commit:
        return None
    if context.branch == repo.branch:
        return None
    if repo.is_ancestor(context.commit) is not False:
        return None
    return {"written_on": context.branch, "merged": False,
            "note": f"written on branch {context.branch!r}, which this branch "
                    f"({repo.branch or 'detached HEAD'!s}) has not merged: it may describe "
                    "code that is not here"}


def refreshed(workspace: str, context: CodeContext) -> tuple[CodeContext, list[str]]:
    """The anchors re-captured where their code is now (after the agent confirmed the memory
    still holds): moved ones at their new place, changed ones as the code now reads; anchors
    whose code is gone are dropped, and said so."""
    repo = Repo.of(workspace)
    cache = FileCache()
    kept: list[Anchor] = []
    notes: list[str] = []
    for anchor in context.anchors:
        state = check(workspace, anchor, repo, cache)
        target = state.now if state.now is not None else anchor
        if state.state == "deleted":
            notes.append(f"{anchor.where}: the code is gone, anchor dropped")
            continue
        try:
            kept.append(_without_secrets(capture(workspace, target.path, target.start,
                                                 target.end, target.symbol, auto=anchor.auto,
                                                 repo=repo)))
        except AnchorError as exc:
            notes.append(f"{anchor.where}: {exc}; anchor dropped")
    return dataclasses.replace(context, anchors=tuple(kept)), notes


# -- review ----------------------------------------------------------------------------------------

MAX_STALE_LISTED = 200  # memories listed per file


def stale_report(memories: list[Memory], include_moved: bool = False,
                 checkouts: dict[str, str] | None = None
                 ) -> tuple[dict[str, object], dict[int, Freshness]]:
    """Stale memories grouped by the file of their stale anchors (memory_stale), and the
    freshness of each memory checked (`checkouts`: as freshness() takes them)."""
    files, stale, found = stale_files(memories, include_moved, checkouts)
    out: dict[str, object] = {"anchored": len(memories), "stale": stale, "files": files}
    if stale:
        out["hint"] = ("read the cited code; for memories that still hold call "
                       "memory_update(updates=[{\"id\": …, \"refresh_anchors\": true}, …]) "
                       "(all of them in one call); correct the others with memory_update or "
                       "remove them with memory_delete")
    return out, found


def stale_files(memories: list[Memory], include_moved: bool = False,
                checkouts: dict[str, str] | None = None
                ) -> tuple[list[StaleFile], int, dict[int, Freshness]]:
    """The files of stale anchors, each with the memories citing it (up to
    MAX_STALE_LISTED), how many memories are stale, and the freshness of each checked."""
    found = freshness(memories, checkouts)
    wanted: tuple[AnchorState, ...] = ("changed", "deleted", "moved") if include_moved \
        else ("changed", "deleted")
    by_file: dict[str, list[StaleEntry]] = {}
    stale_ids: list[int] = []
    contents = {m.id: m.content for m in memories}
    for memory_id, f in sorted(found.items()):
        checks = [c for c in f.checks if c.state in wanted]
        if not checks:
            continue
        stale_ids.append(memory_id)
        for c in checks:
            by_file.setdefault(c.anchor.path, []).append(StaleEntry(
                id=memory_id, content=_preview(contents[memory_id]), **c.view()))
    files = [StaleFile(path=path, memories=entries[:MAX_STALE_LISTED])
             for path, entries in sorted(by_file.items())]
    return files, len(stale_ids), found


def _preview(text: str, chars: int = 160) -> str:
    return text if len(text) <= chars else text[:chars] + "…"
