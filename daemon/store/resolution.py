"""Which workspace's memory a call uses, and why: the folder the client sent, checked, and
for a git worktree its repository's main checkout, so that every worktree of one
repository shares one memory. The daemon resolves it, so every client agrees.

Two paths come out: `workspace`, whose memory (the key of its database and its rows), and
`checkout`, where the call runs (the worktree: its files are what code anchors are checked
against, its HEAD the branch a memory is written on)."""
import os
from dataclasses import dataclass

from ..code.worktrees import NotLinked, Worktree, linked_worktree
from ..core.errors import ToolError
from .registry import check_workspace

OWN_MEMORY_MARKER = "own-memory"  # <worktree>/.memnest/own-memory: this worktree keeps its own


@dataclass(frozen=True)
class Resolved:
    workspace: str  # whose memory
    checkout: str  # where the call runs
    why: str  # how the workspace was found, in a sentence
    worktree: str = ""  # the worktree's name when the call runs in a linked worktree

    @property
    def moved(self) -> bool:
        """The memory is not the folder's own: a worktree shares its repository's."""
        return self.workspace != self.checkout

    def view(self) -> dict[str, str]:
        out = {"path": self.workspace, "why": self.why}
        if self.moved:
            out["checkout"] = self.checkout
        if self.worktree:
            out["worktree"] = self.worktree
        return out


def resolve(given: str, worktrees: str = "shared", personal: str = "") -> Resolved:
    """The workspace for a call whose client sent `given` (checked: check_workspace's errors
    come out). `worktrees`: MEMNEST_WORKTREES ("shared" or "own"); `personal`: the personal
    tier's folder, which is no workspace."""
    checkout = check_workspace(given)
    refuse_personal_as_workspace(checkout, personal)
    found = linked_worktree(checkout)
    if found is None:
        return Resolved(checkout, checkout, "the folder the client works in")
    if isinstance(found, NotLinked):
        return Resolved(checkout, checkout, f"a git worktree kept apart: {found.reason}")
    if worktrees == "own":
        return Resolved(checkout, checkout, "a git worktree with its own memory "
                        "(MEMNEST_WORKTREES=own)", found.name)
    if os.path.exists(os.path.join(checkout, ".memnest", OWN_MEMORY_MARKER)):
        return Resolved(checkout, checkout, "a git worktree with its own memory "
                        f"(.memnest/{OWN_MEMORY_MARKER})", found.name)
    return _shared(checkout, found)


def _shared(checkout: str, found: Worktree) -> Resolved:
    try:
        home = check_workspace(found.home)
    except Exception as exc:  # noqa: BLE001 - a home memnest may not use: the worktree's own
        return Resolved(checkout, checkout, f"a git worktree kept apart: its repository "
                        f"{found.home} cannot hold memory ({exc})", found.name)
    return Resolved(home, checkout, f"git worktree {found.name!r} of the repository at "
                    f"{home}: every worktree shares its memory", found.name)


def personal_folder(folder: str) -> str:
    """The personal tier's folder (MEMNEST_USER_DIR), made private to the user on first
    use; checked as any workspace is (the user's own, not a link elsewhere)."""
    if not folder:
        raise ToolError("failed_precondition", "the personal tier has no folder: set "
                        "MEMNEST_USER_DIR")
    if not os.path.isdir(folder):
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise ToolError("storage_error", f"cannot make the personal tier's folder "
                            f"{folder}: {exc.strerror}") from None
    if os.path.islink(folder):
        raise ToolError("permission_denied", f"the personal tier's folder {folder} is a "
                        "symbolic link; MEMNEST_USER_DIR must name a folder of its own")
    return check_workspace(folder)


def refuse_personal_as_workspace(workspace: str, personal: str) -> None:
    """The personal tier is reached through scope "user", never as a workspace: as one, it
    would get a team folder and be open to any client allowed a folder around it."""
    if not personal:
        return
    real = os.path.realpath(personal)
    if workspace == real or workspace.startswith(real.rstrip(os.sep) + os.sep):
        raise ToolError("permission_denied", f"{workspace} is memnest's personal tier "
                        "(MEMNEST_USER_DIR), not a project: reach its memories with scope "
                        "\"user\" from any workspace")
