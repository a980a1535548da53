"""A CodeContext's stored JSON text and an export file's object are the same value."""
import json

from memnest_daemon.core.anchors import NO_CODE, Anchor, CodeContext

CONTEXT = CodeContext((Anchor(path="src/app.py", start=3, end=9, symbol="serve"),
                       Anchor(path="docs/ü.md", auto=True)), branch="main", commit="abc")


def test_the_export_object_is_the_stored_json():
    assert json.loads(CONTEXT.to_json()) == CONTEXT.to_dict()
    assert CONTEXT.to_dict() == {
        "anchors": [{"path": "src/app.py", "start": 3, "end": 9, "symbol": "serve"},
                    {"path": "docs/ü.md", "auto": True}],
        "branch": "main", "commit": "abc"}


def test_none_is_falsy_and_stored_as_empty_text():
    assert not NO_CODE and NO_CODE.to_json() == "" and CodeContext.parse("") is NO_CODE
    assert CodeContext.parse(CONTEXT.to_json()) == CONTEXT and CONTEXT
