"""The self-contained HTML page memory_graph_html writes: inline CSS and JS, no fetch of any kind.

User text reaches the page only as JSON inside <script type="application/json">, with `<`, `>`,
`&` and U+2028/U+2029 written as \\u escapes, so no memory can close the script element or
open a tag; the page's code puts text into the DOM with textContent only. A Content Security
Policy (scripts and styles only with the page's nonce, no connections, no images but data:)
backs that up: even markup that got through could neither run nor load anything.
"""
import json
import secrets
from functools import lru_cache
from importlib.resources import files

SIGNATURE = b"<!DOCTYPE html>\n<!-- memnest graph view -->"


@lru_cache(maxsize=1)
def _template() -> str:
    """The page (assets/graph_page.html, shipped as package data)."""
    page = files("memnest_daemon.tools").joinpath("assets").joinpath("graph_page.html")
    return page.read_text(encoding="utf-8")


def script_json(value) -> str:
    """JSON that is safe verbatim inside a <script> element."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def render(data: dict) -> bytes:
    nonce = secrets.token_urlsafe(18)
    head, tail = _template().split("__DATA__")
    page = head.replace("__NONCE__", nonce) + script_json(data) + tail.replace("__NONCE__", nonce)
    out = page.encode("utf-8")
    assert out.startswith(SIGNATURE)
    return out
