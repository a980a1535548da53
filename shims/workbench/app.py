"""The workbench as one ASGI application: its routes, what a failure looks like, the guard in
front of everything."""
from importlib.resources import files

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from . import actions, views
from .daemon_link import DaemonLink, DaemonUnavailable, ToolFailure, UnknownWorkspace
from .guard import Guard, Keys
from .pages import page

# A tool's error code -> the HTTP status its page is answered with.
_STATUS = {"not_found": 404, "conflict": 409, "permission_denied": 403}


def _routes() -> list[Route | Mount]:
    static = StaticFiles(directory=str(files("memnest_shims.workbench").joinpath("static")))
    return [
        Route("/", views.memories),
        Route("/memory/{memory_id:int}", views.memory),
        Route("/memory/{memory_id:int}/edit", actions.edit, methods=["POST"]),
        Route("/memory/{memory_id:int}/refresh", actions.refresh, methods=["POST"]),
        Route("/memory/{memory_id:int}/share", actions.share, methods=["POST"]),
        Route("/forget", views.confirm_forget),
        Route("/forget", actions.forget, methods=["POST"]),
        Route("/review", views.review),
        Route("/review/keep", actions.review_keep, methods=["POST"]),
        Route("/pair/separate", actions.keep_separate, methods=["POST"]),
        Route("/pair/supersede", actions.supersede, methods=["POST"]),
        Route("/pair/merge", actions.merge, methods=["POST"]),
        Route("/team", views.team),
        Route("/team/sync", actions.sync, methods=["POST"]),
        Route("/graph", views.graph),
        Route("/dream", views.dream),
        Route("/dream", actions.dream, methods=["POST"]),
        Route("/workspaces", views.workspaces),
        Route("/changes", views.changes),
        Mount("/static", static, name="static"),
    ]


async def _tool_failed(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ToolFailure)
    return page(request, "error.html", status_code=_STATUS.get(exc.code, 400),
                title="The daemon refused this", message=exc.message)


async def _no_daemon(request: Request, exc: Exception) -> Response:
    return page(request, "error.html", status_code=503, title="memnestd is not reachable",
                message=str(exc))


async def _unknown_workspace(request: Request, exc: Exception) -> Response:
    return page(request, "error.html", status_code=404, title="Not a workspace the daemon has "
                "open", message=f"{exc}: open it from an editor or memnest-ctl first, or "
                "pick one on the Workspaces page.")


async def _bad_value(request: Request, exc: Exception) -> Response:
    return page(request, "error.html", status_code=400, title="A value in the form is not "
                "valid", message=str(exc) or "expected a whole number")


def build(link: DaemonLink, keys: Keys, port: int) -> ASGIApp:
    app = Starlette(routes=_routes(), exception_handlers={
        ToolFailure: _tool_failed, DaemonUnavailable: _no_daemon,
        UnknownWorkspace: _unknown_workspace, ValueError: _bad_value})
    app.state.link, app.state.keys = link, keys
    return Guard(app, keys, port)
