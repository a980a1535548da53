"""Who may use the workbench: the browser that opened the launch URL, and nothing else.

The server listens on loopback, but every local user and every web page the person visits
can reach loopback too. So each request must
- name this server in `Host` (a DNS-rebinding page names its own host) and, when it carries
  `Origin`, this server's origin (a change must carry it: browsers always send it on POST);
- ask for a path under the launch's secret root (`/<root>/...`) and carry the session cookie,
  which only the launch URL's key buys (HttpOnly, SameSite=Strict). Cookies are not kept apart
  by port: the browser would send a cookie scoped to `/` to every server on 127.0.0.1, and any
  of them could replay it. This one is scoped to the root's path, so the browser sends it only
  to addresses that name the root; a server on another port never sees it, and the cookie
  alone, replayed, opens nothing. The root is in the page's address only, which other origins
  cannot read (Referrer-Policy same-origin keeps it out of what they are sent);
- when it changes anything (any method but GET and HEAD), carry the CSRF token in its form or
  in `X-CSRF-Token`.
Every answer says the Content-Security-Policy (scripts only from this server, none inline),
and is never cached.
"""
import hmac
import html
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qs, urlencode

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_FIELD: Final = "csrf"
CSRF_HEADER: Final = "x-csrf-token"
LAUNCH_PARAMETER: Final = "key"
# A form holds at most one memory's text and a few fields; anything larger is refused unread.
MAX_BODY_BYTES: Final = 4 * 1024 * 1024
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})

POLICY: Final = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                 "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
                 "base-uri 'none'")
HEADERS: Final = (
    (b"content-security-policy", POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make Origin "null"
    (b"x-frame-options", b"DENY"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def _token() -> str:
    return secrets.token_urlsafe(32)


@dataclass
class Keys:
    """The secrets of one launch. `launch` is in the URL memnest-ctl ui prints (the terminal
    is the person's own); `opener` is handed to the browser it opens, through a private file
    (launch.py), never on a command line: it buys a cookie once only, and `spent` is called
    then. `root` is the path every page is served under, and the only path the session cookie
    is sent to."""
    launch: str = field(default_factory=_token)
    opener: str = field(default_factory=_token)
    session: str = field(default_factory=_token)
    csrf: str = field(default_factory=_token)
    root: str = field(default_factory=lambda: "/" + _token())
    opener_used: bool = False
    spent: Callable[[], None] | None = None

    def admits_launch(self, given: str) -> bool:
        if _same(given, self.launch):
            return True
        if not self.opener_used and _same(given, self.opener):
            self.opener_used = True
            if self.spent is not None:
                self.spent()
            return True
        return False


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


class Guard:
    """ASGI middleware in front of the whole workbench."""

    def __init__(self, app: ASGIApp, keys: Keys, port: int):
        self.app, self.keys = app, keys
        self.cookie = f"memnest_workbench_{port}"
        self.hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"})
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        method = scope["method"]
        refusal = self._refusal(headers, method)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        launch = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(
            LAUNCH_PARAMETER)
        if launch is not None and method in SAFE_METHODS:
            await self._exchange(scope, send, launch[-1])
            return
        if not self._under_root(scope["path"]) or \
                not _same(_cookie(headers, self.cookie), self.keys.session):
            await _answer(send, 401, "This workbench needs the address `memnest-ctl ui` "
                                     "printed (it carries a key). Run it again for a new one.")
            return
        scope = {**scope, "root_path": scope.get("root_path", "") + self.keys.root}
        if method not in SAFE_METHODS:
            await self._checked_change(scope, receive, send, headers)
            return
        await self.app(scope, receive, _with_headers(send))

    def _under_root(self, path: str) -> bool:
        """Whether `path` is the root or below it (compared in constant time)."""
        root = self.keys.root
        return _same(path[:len(root)], root) and path[len(root):len(root) + 1] in ("", "/")

    def _refusal(self, headers: Headers, method: str) -> tuple[int, str] | None:
        if headers.get("host", "") not in self.hosts:
            return 403, "This workbench answers only at 127.0.0.1 or localhost on its own port."
        origin = headers.get("origin")
        if origin is not None and origin not in self.origins:
            return 403, "Requests from another site are refused."
        if method not in SAFE_METHODS and origin is None:
            return 403, "A change must come from the workbench's own page (no Origin header)."
        if headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
            if method not in SAFE_METHODS or headers.get("sec-fetch-mode") != "navigate":
                return 403, "Requests from another site are refused."
        return None

    async def _exchange(self, scope: Scope, send: Send, given: str) -> None:
        if not self.keys.admits_launch(given):
            await _answer(send, 401, "This key is not valid (a browser's key works once). Use "
                                     "the address `memnest-ctl ui` printed, or run it again.")
            return
        kept = [(k, v) for k, values in parse_qs(scope["query_string"].decode("latin-1")).items()
                if k != LAUNCH_PARAMETER for v in values]
        path = scope["path"]
        if self._under_root(path):
            path = path[len(self.keys.root):] or "/"
        target = self.keys.root + path + (f"?{urlencode(kept)}" if kept else "")
        cookie = (f"{self.cookie}={self.keys.session}; HttpOnly; SameSite=Strict; "
                  f"Path={self.keys.root}")
        # A page that moves on by itself, not a redirect: a browser opened from a file (or
        # by another site's link) would withhold a SameSite=Strict cookie all along a redirect
        # chain that began elsewhere; this page's own navigation is same-origin.
        shown = html.escape(target, quote=True)
        page = (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                f'<meta http-equiv="refresh" content="0;url={shown}">'
                f'<link rel="icon" href="data:,"><title>memnest workbench</title></head>'
                f'<body><p>Signed in. <a href="{shown}">Open the workbench</a>.</p></body>'
                f'</html>')
        await _answer(send, 200, page, [(b"set-cookie", cookie.encode())],
                      content_type=b"text/html; charset=utf-8")

    async def _checked_change(self, scope: Scope, receive: Receive, send: Send,
                              headers: Headers) -> None:
        body = await _read_body(receive)
        if body is None:
            await _answer(send, 413, "The request is too large.")
            return
        token = headers.get(CSRF_HEADER)
        if token is None:
            if not headers.get("content-type", "").startswith(
                    "application/x-www-form-urlencoded"):
                await _answer(send, 415, "Changes are sent as forms.")
                return
            token = parse_qs(body.decode("utf-8", "replace")).get(CSRF_FIELD, [None])[-1]
        if not _same(token, self.keys.csrf):
            await _answer(send, 403, "The form's token is missing or stale: reload the page "
                                     "and try again. Nothing was changed.")
            return
        await self.app(scope, _replay(body), _with_headers(send))


def _cookie(headers: Headers, name: str) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


async def _read_body(receive: Receive) -> bytes | None:
    """The whole body, or None once it passes MAX_BODY_BYTES."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}
    return receive


def _with_headers(send: Send) -> Send:
    """Adds HEADERS; a page that sets a stricter policy of its own (the graph) keeps it."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            own = [(k, v) for k, v in message.get("headers", [])]
            named = {k.lower() for k, _ in own}
            message = {**message, "headers": [*own, *((k, v) for k, v in HEADERS
                                                     if k not in named)]}
        await send(message)
    return sending


async def _answer(send: Send, status: int, text: str,
                  extra: Iterable[tuple[bytes, bytes]] = (),
                  content_type: bytes = b"text/plain; charset=utf-8") -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type),
                            (b"content-length", str(len(body)).encode()), *extra, *HEADERS]})
    await send({"type": "http.response.body", "body": body})
