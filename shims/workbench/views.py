"""The pages that only read: the memories (listed or searched), one memory, the workspaces,
the review queue, team and dream. Each is a URL that can be bookmarked; what it shows comes
from one or a few tool calls, rendered by pages.py."""
import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response

from ..tool_json import ToolArguments, ToolResult
from .daemon_link import DaemonLink, ToolFailure
from .pages import page

PAGE_SIZE: Final = 50
PREVIEW_CHARS: Final = 400
SEARCH_DEPTH: Final = 10_000  # memory_search pages no deeper
ORDERS: Final = ("recent", "created", "importance", "accessed")
CATEGORIES: Final = ("learning", "preference", "decision", "pattern", "general")
VIAS: Final = ("agent", "cli", "hook", "import", "team", "query")
SCOPES: Final = ("private", "shared", "user")  # user: the personal tier
# "Only": what memory_list's boolean filters select, by the word the page shows.
STATES: Final = {"stale": {"stale": True}, "conflicted": {"conflicted": True},
                 "superseded": {"superseded": True}, "current": {"superseded": False}}
# What a redirect after a change says, by the code it puts in `done`.
NOTICES: Final = {
    "saved": "Saved.", "forgot": "Forgotten.", "shared": "Shared with the team.",
    "unshared": "No longer shared.", "kept": "Marked as reviewed.",
    "separate": "Recorded: both hold.", "superseded": "Recorded which one replaces the other.",
    "merged": "Merged.", "refreshed": "Anchored to the code as it is now.",
    "synced": "Synced with the team's files.",
}
# The graph page's own policy names the nonce of its inline script and style.
_NONCE = re.compile(r"'nonce-([A-Za-z0-9_-]+)'")
# The words a search matched, to say why a memory came back.
_WORD = re.compile(r"\w{3,}", re.UNICODE)


@dataclass(frozen=True)
class ListQuery:
    """What the memories page was asked: its query parameters, checked."""
    q: str
    tag: str
    category: str
    scope: str
    via: str
    state: str
    since: str  # a day, YYYY-MM-DD: changed on or after it
    until: str  # a day: changed on or before it
    order: str
    page: int
    everywhere: bool = False  # the search also reads every project of the user's


    @classmethod
    def read(cls, request: Request) -> "ListQuery":
        p = request.query_params
        return cls(q=p.get("q", "").strip()[:1000], tag=p.get("tag", "").strip()[:100],
                   category=_one_of(p.get("category"), CATEGORIES),
                   scope=_one_of(p.get("scope"), SCOPES), via=_one_of(p.get("via"), VIAS),
                   state=_one_of(p.get("state"), tuple(STATES)),
                   since=_day(p.get("since")), until=_day(p.get("until")),
                   order=_one_of(p.get("order"), ORDERS) or "recent",
                   page=max(1, min(_whole(p.get("page"), 1), 10**9)),
                   everywhere=p.get("all") == "1")

    def params(self, ws: str, home: str) -> dict[str, Any]:
        """The query string that brings this view back."""
        kept = {"ws": ws if ws != home else "", "q": self.q, "tag": self.tag,
                "category": self.category, "scope": self.scope, "via": self.via,
                "state": self.state, "since": self.since, "until": self.until,
                "order": self.order if self.order != "recent" else "",
                "all": "1" if self.everywhere else ""}
        return {k: v for k, v in kept.items() if v}

    def filters(self) -> ToolArguments:
        """The filters both memory_list and memory_search take."""
        out: ToolArguments = {}
        if self.category:
            out["category"] = self.category
        if self.via:
            out["via"] = self.via
        return out

    @property
    def narrowed(self) -> bool:
        return any((self.q, self.tag, self.category, self.scope, self.via, self.state,
                    self.since, self.until))

    def listing_filters(self) -> ToolArguments:
        """What memory_list takes beyond filters(): scope, state and the days."""
        out: ToolArguments = {**STATES.get(self.state, {})}
        if self.scope:
            out["scope"] = self.scope
        if self.since:
            out["since"] = self.since
        last = date.fromisoformat(self.until) if self.until else date.max
        if last < date.max:  # the whole day: memory_list's bound is exclusive
            out["until"] = (last + timedelta(days=1)).isoformat()
        return out


def _day(text: str | None) -> str:
    try:
        return date.fromisoformat(text).isoformat() if text and len(text) == 10 else ""
    except ValueError:
        return ""


def _one_of(value: str | None, allowed: tuple[str, ...]) -> str:
    return value if value in allowed else ""


def _whole(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def link_of(request: Request) -> DaemonLink:
    link: DaemonLink = request.app.state.link
    return link


def workspace_of(request: Request) -> str:
    return link_of(request).workspace(request.query_params.get("ws"))


def memories(request: Request) -> Response:
    ask = ListQuery.read(request)
    ws = workspace_of(request)
    offset = (ask.page - 1) * PAGE_SIZE
    if ask.q:
        found = _search(request, ask, ws, offset)
    else:
        found = _listing(request, ask, ws, offset)
    rows: list[ToolResult] = found.get("memories", found.get("results")) or []
    return page(request, "memories.html", ws=ws, ask=ask,
                params=ask.params(ws, link_of(request).home), rows=rows,
                total=found.get("total"), has_more=bool(found.get("has_more")),
                offset=offset, page_size=PAGE_SIZE, orders=ORDERS, categories=CATEGORIES,
                vias=VIAS, scopes=SCOPES, states=tuple(STATES),
                checked_only=found.get("checked_only"), why=_reasons(ask.q, rows) if ask.q else {},
                notice=NOTICES.get(request.query_params.get("done", ""), ""))


def _listing(request: Request, ask: ListQuery, ws: str, offset: int) -> ToolResult:
    arguments: ToolArguments = {"order_by": ask.order, "limit": PAGE_SIZE, "offset": offset,
                                "preview_chars": PREVIEW_CHARS, **ask.filters(),
                                **ask.listing_filters()}
    if ask.tag:
        arguments["topic"] = ask.tag
    return link_of(request).call("memory_list", arguments, ws)


def _search(request: Request, ask: ListQuery, ws: str, offset: int) -> ToolResult:
    arguments: ToolArguments = {"query": ask.q, "top_k": PAGE_SIZE,
                                "offset": min(offset, SEARCH_DEPTH), "explain": True,
                                "preview_chars": PREVIEW_CHARS, **ask.filters()}
    if ask.tag:
        arguments["tags"] = [ask.tag]
    if ask.everywhere:
        arguments["workspaces"] = ["*"]
    found = link_of(request).call("memory_search", arguments, ws)
    # memory_search ranks by meaning and has no filter for these: keep this page's hits
    found["results"] = [r for r in found.get("results", []) if _hit_admitted(ask, r)]
    return found


def _hit_admitted(ask: ListQuery, hit: ToolResult) -> bool:
    code = hit.get("code") or {}
    state = {"stale": "verify" in code, "conflicted": bool(hit.get("conflicts")),
             "superseded": bool(hit.get("superseded")), "current": not hit.get("superseded")}
    day = str(hit.get("updated_at", ""))[:10]
    return ((not ask.scope or hit.get("scope", "private") == ask.scope)
            and (not ask.state or state[ask.state])
            and (not ask.since or day >= ask.since) and (not ask.until or day <= ask.until))


def _reasons(query: str, rows: list[ToolResult]) -> dict[int, list[str]]:
    """Per hit, in words: which channels brought it and which query words it holds."""
    words = {w.lower() for w in _WORD.findall(query)}
    reasons: dict[int, list[str]] = {}
    for row in rows:
        parts: dict[str, float] = row.get("explain") or {}
        said = [f"{name} {value:.2f}" for name, value in
                sorted(parts.items(), key=lambda kv: -kv[1]) if value > 0]
        held = sorted(words & {w.lower() for w in _WORD.findall(row.get("content", ""))})
        if held:
            said.insert(0, "matched: " + ", ".join(held))
        code = row.get("code") or {}
        if code.get("state"):
            said.append(f"code {code['state']}")
        reasons[int(row["id"])] = said
    return reasons


def memory(request: Request) -> Response:
    ws = workspace_of(request)
    memory_id = int(request.path_params["memory_id"])
    found = link_of(request).call("memory_get", {"id": memory_id}, ws)
    return page(request, "memory.html", ws=ws, m=found, categories=CATEGORIES,
                notice=NOTICES.get(request.query_params.get("done", ""), ""))


def confirm_forget(request: Request) -> Response:
    ws = workspace_of(request)
    ids = _ids(request.query_params.getlist("id"))
    got = link_of(request).call("memory_get", {"ids": ids, "include_edges": False}, ws) \
        if ids else {"memories": []}
    return page(request, "forget.html", ws=ws, memories=got.get("memories", []))


def _ids(given: list[str]) -> list[int]:
    return sorted({int(i) for i in given if i.isdigit() and 0 < int(i) < 2**53})[:500]


def workspaces(request: Request) -> Response:
    """The open workspaces, each with its health as memory_stats judges it."""
    link = link_of(request)
    rows = []
    for w in link.open_workspaces():
        try:
            stats = link.call("memory_stats", {}, w.path)
            health = {"healthy": bool(stats["index_health"]["healthy"]),
                      "vector_index": stats["vector_index"]["status"],
                      "warnings": list(stats.get("warnings", []))}
        except ToolFailure as exc:
            health = {"healthy": False, "vector_index": "", "warnings": [exc.message]}
        rows.append((w, health))
    return page(request, "workspaces.html", open=rows)


def changes(request: Request) -> Response:
    """What the page's script polls to show writes without a reload: the newest change."""
    ws = workspace_of(request)
    newest = link_of(request).call("memory_list", {"limit": 1, "preview_chars": 0}, ws)
    first = (newest.get("memories") or [{}])[0]
    return JSONResponse({"total": newest.get("total", 0),
                         "newest": [first.get("id"), first.get("updated_at")]})


def review(request: Request) -> Response:
    ws = workspace_of(request)
    offset = (max(1, _whole(request.query_params.get("page"), 1)) - 1) * PAGE_SIZE
    queue = link_of(request).call("memory_review", {"limit": PAGE_SIZE, "offset": offset,
                                                    "preview_chars": PREVIEW_CHARS}, ws)
    return page(request, "review.html", ws=ws, queue=queue, offset=offset,
                notice=NOTICES.get(request.query_params.get("done", ""), ""))


def team_state(request: Request) -> dict[str, ToolResult]:
    """What the team page shows: the shared memories and the workspace's counts."""
    ws = workspace_of(request)
    shared = link_of(request).call("memory_list", {"scope": "shared", "limit": PAGE_SIZE,
                                                    "preview_chars": 200}, ws)
    stats = link_of(request).call("memory_stats", {}, ws)
    return {"shared": shared, "stats": stats}


def team(request: Request) -> Response:
    state = team_state(request)
    return page(request, "team.html", ws=workspace_of(request), synced=None,
                notice=NOTICES.get(request.query_params.get("done", ""), ""),
                shared=state["shared"], stats=state["stats"])


def dream(request: Request) -> Response:
    return page(request, "dream.html", ws=workspace_of(request), report=None, dry_run=True,
                last=last_dream(request),
                notice=NOTICES.get(request.query_params.get("done", ""), ""))


def last_dream(request: Request) -> ToolResult | None:
    """What the last dream did (memory_stats keeps it), for the dream page."""
    found = link_of(request).call("memory_stats", {}, workspace_of(request)).get("last_dream")
    return found if isinstance(found, dict) else None


def graph(request: Request) -> Response:
    """The graph page memory_graph_html draws, live. Its script is inline (with a nonce), so
    it is sent with a policy of its own, sandboxed: the page runs without this origin, its
    cookie or any way to ask the workbench anything."""
    drawn = link_of(request).call("memory_graph_html", {"inline": True}, workspace_of(request))
    html = str(drawn["html"])
    found = _NONCE.search(html)
    nonce = found.group(1) if found else "none"
    policy = (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; "
              "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; "
              "sandbox allow-scripts")
    return HTMLResponse(html, headers={"content-security-policy": policy})
