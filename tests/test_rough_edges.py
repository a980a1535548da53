"""Rough edges a new user hit (issue 20): ids a JavaScript client can hold exactly, and
reference-server settings that memnestd does not use are refused or named, not ignored."""
import pytest

from memnest_daemon.tools import TOOLS
from memnest_shims.client import ToolFailure

MAX_SAFE_INT = 2**53 - 1  # Number.MAX_SAFE_INTEGER


def _integers(schema, path="") -> list[tuple[str, dict]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "integer":
            found.append((path, schema))
        for key, value in schema.items():
            found += _integers(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for n, value in enumerate(schema):
            found += _integers(value, f"{path}[{n}]")
    return found


def test_every_integer_a_tool_takes_is_exact_in_javascript():
    too_big = [f"{name}{path}: {s.get('maximum')}" for name, tool in TOOLS.items()
               for path, s in _integers(tool.schema)
               if s.get("maximum") is None or s["maximum"] > MAX_SAFE_INT]
    assert not too_big, too_big


def test_an_id_past_the_safe_range_is_a_clear_error(call):
    with pytest.raises(ToolFailure) as refused:
        call("memory_get", id=MAX_SAFE_INT + 1)
    assert refused.value.code == "invalid_argument"
    assert str(MAX_SAFE_INT) in refused.value.message


def test_a_dimension_that_is_not_the_models_is_refused(fresh_daemon):
    fresh_daemon.env["MEMORY_EMBEDDING_DIM"] = "768"
    proc = fresh_daemon.start(wait=False)
    assert proc.wait(timeout=120) == 1
    assert "MEMORY_EMBEDDING_DIM='768', but the model gives 384" in proc.stderr.read()


def test_the_models_own_dimension_is_accepted_and_the_timeout_is_named(fresh_daemon, workspace):
    fresh_daemon.env.update(MEMORY_EMBEDDING_DIM="384", MEMORY_EMBED_TIMEOUT_S="30")
    fresh_daemon.start()
    client = fresh_daemon.client()
    assert client.call_tool("memory_stats", {}, str(workspace))["memories"] == 0
    client.close()
    assert "MEMORY_EMBED_TIMEOUT_S is ignored" in fresh_daemon.log.read_text()

