"""Rendering: the templates (package data under templates/), always autoescaped, and the small
filters they use. Memory text reaches a page only through `{{ }}`, never `|safe`, and is shown
as text (no markdown), so nothing a memory holds can become markup."""
from datetime import datetime, timezone
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse

from .guard import CSRF_FIELD, Keys

_environment = Environment(loader=PackageLoader("memnest_shims.workbench", "templates"),
                           autoescape=True, undefined=StrictUndefined, trim_blocks=True,
                           lstrip_blocks=True)


def _ago(stamp: str | None) -> str:
    """'3 min ago' for an ISO time the daemon gave."""
    if not stamp:
        return ""
    try:
        then = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    seconds = (datetime.now(timezone.utc) - then).total_seconds()
    for size, unit in ((86400 * 365, "y"), (86400 * 30, "mo"), (86400, "d"), (3600, "h"),
                       (60, "min")):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return "just now"


def _query(params: dict[str, Any], **changes: Any) -> str:
    """The query string of `params` with `changes` applied (None or "" drops a key)."""
    merged = {**params, **changes}
    return urlencode({k: v for k, v in merged.items() if v not in (None, "")}, doseq=True)


_environment.filters["ago"] = _ago
_environment.globals["query"] = _query


def page(request: Request, template: str, status_code: int = 200,
         **values: Any) -> HTMLResponse:
    """A whole page; every template extends base.html, which needs the CSRF token and the
    workspace the request is about."""
    keys: Keys = request.app.state.keys
    # root: the launch's secret path, in front of every address a page names (guard.py)
    context = {"csrf_field": CSRF_FIELD, "csrf": keys.csrf, "root": keys.root,
               "path": request.url.path.removeprefix(keys.root) or "/",
               "home": request.app.state.link.home, **values}
    context.setdefault("ws", request.app.state.link.home)
    context.setdefault("notice", request.query_params.get("done", ""))
    return HTMLResponse(_environment.get_template(template).render(context),
                        status_code=status_code)
