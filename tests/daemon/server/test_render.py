"""server/render.py: the response format MEMORY_RESPONSE_FORMAT picks (JSON by default, a bad
value falls back to it with a warning) and both renderings carrying the same value."""
import json
import logging

import pytest
import toon_format
from memnest_daemon.server.render import render, response_format


# -- the choice ------------------------------------------------------------------------------

@pytest.mark.parametrize("value, chosen", [
    (None, "json"), ("", "json"), ("json", "json"), ("toon", "toon"), (" TOON ", "toon")])
def test_the_default_is_json_and_the_variable_picks_the_format(value, chosen):
    assert response_format(value) == chosen


def test_a_bad_value_falls_back_to_json_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="memnest_daemon.server.render"):
        assert response_format("yaml") == "json"
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "MEMORY_RESPONSE_FORMAT='yaml'" in warning and "using json" in warning


def test_both_renderings_carry_the_same_value():
    result = {"results": [{"id": 1, "content": 'a, b: "c"\nd …', "tags": ["x", "y"],
                           "score": 0.5, "explain": {"vector": 0.25}},
                          {"id": 2, "content": "123", "tags": [], "score": 1.0,
                           "accessed_at": "2026-01-02T03:04:05Z", "truncated": True}],
              "count": 2, "has_more": False, "scope": "workspace", "missing": [],
              "filters": {}, "none": None}
    compact = render(result, "json")
    assert json.loads(compact) == result
    assert compact.startswith('{"results":[{"id":1,"content":"a, b: \\"c\\"\\nd …",')
    assert toon_format.decode(render(result, "toon")) == result
