"""The changes the workbench makes, each one form POST (guard.py has checked its origin and
CSRF token) turned into the tool calls an agent would make, so every edit takes the daemon's
one write path. An edit or a forget names the version of the memory the page showed
(`updated_at`); the daemon refuses it when the memory changed since, and the page shows the
new version beside the person's draft instead of overwriting an agent's or another tab's
write. Afterwards the browser is sent back (303) to the page the form came from."""
from typing import Any, Final
from urllib.parse import urlencode

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from ..tool_json import ToolArguments, ToolResult
from .pages import page
from .views import CATEGORIES, last_dream, link_of, team_state, workspace_of

MAX_TAGS: Final = 50
PROPOSALS_SHOWN: Final = 20  # of dream's merges and prunes, each with its memories' text


def _back(request: Request, form: FormData, fallback: str, done: str) -> RedirectResponse:
    """303 to the page the form names (only a path of this server, under the launch's root),
    saying what was done."""
    target = str(form.get("back") or fallback)
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        target = fallback
    joiner = "&" if "?" in target else "?"
    root = request.app.state.keys.root
    return RedirectResponse(f"{root}{target}{joiner}{urlencode({'done': done})}",
                            status_code=303)


def _memory_id(request: Request) -> int:
    return int(request.path_params["memory_id"])


def _tags(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for tag in text.split(","):
        if tag.strip():
            seen[tag.strip()] = None
    return list(seen)[:MAX_TAGS]


def _ids(form: FormData) -> list[int]:
    return sorted({int(str(v)) for v in form.getlist("id") if str(v).isdigit()
                   and 0 < int(str(v)) < 2**53})


def _version(form: FormData, memory_id: int) -> str:
    return str(form.get(f"version_{memory_id}") or form.get("version") or "")


async def edit(request: Request) -> Response:
    form = await request.form()
    ws, memory_id = workspace_of(request), _memory_id(request)
    change: ToolArguments = {"id": memory_id, "content": str(form.get("content", "")),
                             "tags": _tags(str(form.get("tags", ""))),
                             "importance": int(str(form.get("importance") or 3))}
    if form.get("category") in CATEGORIES:
        change["category"] = str(form.get("category"))
    version = _version(form, memory_id)
    if version:
        change["expected_updated_at"] = version
    done = link_of(request).call("memory_update", change, ws)
    if done.get("status") == "changed":
        return _changed_meanwhile(request, ws, memory_id, done, draft=change)
    return _back(request, form, f"/memory/{memory_id}", "saved")


def _changed_meanwhile(request: Request, ws: str, memory_id: int, done: ToolResult,
                       draft: ToolArguments | None = None) -> Response:
    current = link_of(request).call("memory_get", {"id": memory_id}, ws)
    return page(request, "memory.html", status_code=409, ws=ws, m=current,
                categories=CATEGORIES, draft=draft,
                conflict="This memory changed after the page was loaded (by an agent or "
                         "another tab), so nothing was saved. The version below is the "
                         "current one" + (", with your edit kept in the form." if draft
                                          else "; forget it again if it should still go."))


async def forget(request: Request) -> Response:
    form = await request.form()
    ws = workspace_of(request)
    ids = _ids(form)
    if not ids:
        return _back(request, form, "/", "")
    expected = {str(i): _version(form, i) for i in ids if _version(form, i)}
    arguments: ToolArguments = {"ids": ids}
    if expected:
        arguments["expected_updated_at"] = expected
    done = link_of(request).call("memory_delete", arguments, ws)
    changed = [int(i) for i in done.get("changed", [])]
    if changed:
        return _changed_meanwhile(request, ws, changed[0], done)
    return _back(request, form, "/", "forgot")


async def refresh(request: Request) -> Response:
    """The person checked the cited code and the memory still holds: anchor it as it is."""
    form = await request.form()
    ws, memory_id = workspace_of(request), _memory_id(request)
    link_of(request).call("memory_update", {"id": memory_id, "refresh_anchors": True}, ws)
    return _back(request, form, f"/memory/{memory_id}", "refreshed")


async def share(request: Request) -> Response:
    form = await request.form()
    ws, memory_id = workspace_of(request), _memory_id(request)
    unshare = form.get("unshare") == "1"
    link_of(request).call("memory_share", {"id": memory_id, "unshare": unshare}, ws)
    return _back(request, form, f"/memory/{memory_id}", "unshared" if unshare else "shared")


async def keep_separate(request: Request) -> Response:
    form = await request.form()
    pair = _ids(form)[:2]
    link_of(request).call("memory_keep_separate", {"pairs": [pair]}, workspace_of(request))
    return _back(request, form, "/review", "separate")


async def supersede(request: Request) -> Response:
    """`newer` replaces `older`: a SUPERSEDES link, which demotes the older in search."""
    form = await request.form()
    link_of(request).call("memory_relate", {
        "from_id": int(str(form.get("newer"))), "to_id": int(str(form.get("older"))),
        "relationship": "SUPERSEDES"}, workspace_of(request))
    return _back(request, form, "/review", "superseded")


async def merge(request: Request) -> Response:
    """Keep one memory with the text the person settled on and both memories' tags, then
    forget the other. The kept one is written first: if the forget fails, both remain."""
    form = await request.form()
    ws, link = workspace_of(request), link_of(request)
    keep, drop = int(str(form.get("keep"))), int(str(form.get("drop")))
    both = link.call("memory_get", {"ids": [keep, drop], "include_edges": False}, ws)
    found = {m["id"]: m for m in both.get("memories", [])}
    if keep not in found or drop not in found:
        return _back(request, form, "/review", "")
    tags = list(dict.fromkeys([*found[keep]["tags"], *found[drop]["tags"]]))
    content = str(form.get("content") or found[keep]["content"])
    link.call("memory_update", {"id": keep, "content": content, "tags": tags[:MAX_TAGS],
                                "importance": max(found[keep]["importance"],
                                                  found[drop]["importance"])}, ws)
    link.call("memory_delete", {"id": drop}, ws)
    return _back(request, form, f"/memory/{keep}", "merged")


async def review_keep(request: Request) -> Response:
    form = await request.form()
    arguments: ToolArguments = ({"keep_all": True} if form.get("all") == "1"
                                else {"keep": _ids(form)})
    link_of(request).call("memory_review", arguments, workspace_of(request))
    return _back(request, form, "/review", "kept")


async def sync(request: Request) -> Response:
    done = link_of(request).call("memory_sync", {}, workspace_of(request))
    state = team_state(request)
    return page(request, "team.html", ws=workspace_of(request), synced=done,
                shared=state["shared"], stats=state["stats"])


async def dream(request: Request) -> Response:
    form = await request.form()
    dry_run = form.get("run") != "1"
    ws, link = workspace_of(request), link_of(request)
    report = link.call("memory_dream", {"dry_run": dry_run, "force": True}, ws)
    merges = _proposed_merges(report)[:PROPOSALS_SHOWN] if dry_run else []
    prunes = [int(i) for i in report.get("would_prune", [])][:PROPOSALS_SHOWN] \
        if dry_run else []
    wanted = sorted({*(i for m in merges for i in m["pair"]), *prunes})
    got = link.call("memory_get", {"ids": wanted, "include_edges": False}, ws) \
        if wanted else {}
    shown = {m["id"]: m for m in got.get("memories", [])}
    return page(request, "dream.html", ws=ws, report=report, dry_run=dry_run, shown=shown,
                last=last_dream(request),
                merges=[m for m in merges if all(i in shown for i in m["pair"])],
                prunes=[shown[i] for i in prunes if i in shown])


def _proposed_merges(report: ToolResult) -> list[dict[str, Any]]:
    """The pairs a dry run found alike: those it would merge by itself, then those in the
    clusters it leaves to a person. Each: pair (the one to keep first), similarity, own."""
    out = [{"pair": [int(m["survivor"]), int(m["absorbed"])],
            "similarity": float(m["similarity"]), "own": True}
           for m in report.get("would_merge", [])]
    out += [{"pair": [int(i) for i in p["ids"]][:2], "similarity": float(p["similarity"]),
             "own": False}
            for c in report.get("clusters", []) for p in c.get("pairs", [])]
    return out
