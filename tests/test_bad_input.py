"""Bad input on every tool: each is refused with a structured error (a stable code and a
message that names the field or says what to do), nothing is written, and the daemon keeps
serving with the same pid."""
from pathlib import Path

import anyio
import pytest

from memnest_proto import memnest_pb2 as pb
from memnest_shims.client import ToolFailure

from support import error_text, result_json

TOOLS = ["memory_store", "memory_search", "memory_get", "memory_list", "memory_update",
         "memory_delete", "memory_stats"]
# Arguments each tool accepts, for the cases where something else (workspace, tool name) is bad.
VALID = {"memory_store": {"content": "a valid memory"}, "memory_search": {"query": "valid"},
         "memory_get": {"id": 1}, "memory_list": {}, "memory_update": {"id": 1, "importance": 2},
         "memory_delete": {"id": 1}, "memory_stats": {}}
UNKNOWN_ID = 987654321
KNOWN = "<known id>"  # replaced by the id of the module's one stored memory
THIS_FILE = str(Path(__file__).resolve())
BASELINE_TEXT = "The baseline memory: bad input must never change it"


def _fill(value, known: int):
    if value == KNOWN:
        return known
    if isinstance(value, dict):
        return {k: _fill(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, known) for v in value]
    return value


def assert_failure(exc: ToolFailure, code: str, words: list[str]) -> None:
    assert exc.code == code, f"expected {code}, got {exc.code}: {exc.message}"
    message = exc.message
    assert message.strip(), "the error has no message"
    assert "Traceback" not in message and "\n" not in message, message
    assert len(message) < 1200, message
    lowered = message.lower()
    missing = [w for w in words if w.lower() not in lowered]
    assert not missing, f"message lacks {missing}: {message!r}"


# -- module state: one workspace with one memory, the daemon's pid before any bad input ------

@pytest.fixture(scope="module")
def client(daemon):
    c = daemon.client()
    yield c
    c.close()


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return tmp_path_factory.mktemp("bad-input-ws").resolve()


@pytest.fixture(scope="module")
def baseline(client, ws):
    known = client.call_tool("memory_store", {"content": BASELINE_TEXT, "tags": ["baseline"]},
                             str(ws))["id"]
    return {"pid": client.status().pid, "id": known}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    """A second workspace for the tests that store things. Few workspaces on purpose: every
    workspace keeps a database open in the shared daemon."""
    return tmp_path_factory.mktemp("bad-input-scratch").resolve()


@pytest.fixture
def call(client, scratch, baseline):
    """Like conftest's `call`, but in the module's scratch workspace."""
    def _call(tool: str, ws: Path | None = None, **arguments):
        return client.call_tool(tool, arguments, str(ws or scratch))
    return _call


def _ids(n: int) -> list[int]:
    return list(range(1, n + 1))


def case(tool, args, code, words, id):
    return pytest.param(tool, args, code, words, id=id)


BAD = [
    # memory_store ---------------------------------------------------------------------
    case("memory_store", {}, "invalid_argument", ["content", "items"], "store-neither"),
    case("memory_store", {"content": 5}, "invalid_argument", ["content", "string"],
         "store-content-int"),
    case("memory_store", {"content": None}, "invalid_argument", ["content", "string"],
         "store-content-null"),
    case("memory_store", {"content": ["a"]}, "invalid_argument", ["content", "string"],
         "store-content-list"),
    case("memory_store", {"content": {"text": "a"}}, "invalid_argument", ["content", "string"],
         "store-content-object"),
    case("memory_store", {"content": "x", "bogus": 1}, "invalid_argument",
         ["bogus", "unexpected"], "store-unknown-arg"),
    case("memory_store", {"content": ""}, "invalid_argument", ["content", "empty"],
         "store-content-empty"),
    case("memory_store", {"content": " \n\t  "}, "invalid_argument", ["content", "whitespace"],
         "store-content-whitespace"),
    case("memory_store", {"content": "x" * 20001}, "invalid_argument",
         ["content", "20000", "split"], "store-content-oversized"),
    case("memory_store", {"content": "before\x00after"}, "invalid_argument", ["content", "NUL"],
         "store-content-nul"),
    case("memory_store", {"content": "x", "importance": 0}, "invalid_argument",
         ["importance", "minimum"], "store-importance-0"),
    case("memory_store", {"content": "x", "importance": 6}, "invalid_argument",
         ["importance", "maximum"], "store-importance-6"),
    case("memory_store", {"content": "x", "importance": "high"}, "invalid_argument",
         ["importance", "integer"], "store-importance-string"),
    case("memory_store", {"content": "x", "importance": None}, "invalid_argument",
         ["importance", "integer"], "store-importance-null"),
    case("memory_store", {"content": "x", "importance": True}, "invalid_argument",
         ["importance", "integer"], "store-importance-bool"),
    case("memory_store", {"content": "x", "category": "gossip"}, "invalid_argument",
         ["category", "learning"], "store-category-unknown"),
    case("memory_store", {"content": "x", "category": 3}, "invalid_argument", ["category"],
         "store-category-int"),
    case("memory_store", {"content": "x", "tags": "ops"}, "invalid_argument", ["tags", "array"],
         "store-tags-string"),
    case("memory_store", {"content": "x", "tags": [1]}, "invalid_argument", ["tags.0", "string"],
         "store-tags-int-item"),
    case("memory_store", {"content": "x", "tags": {"a": 1}}, "invalid_argument",
         ["tags", "array"], "store-tags-object"),
    case("memory_store", {"items": {"content": "x"}}, "invalid_argument", ["items", "array"],
         "store-items-object"),
    case("memory_store", {"items": None}, "invalid_argument", ["items", "array"],
         "store-items-null"),
    case("memory_store", {"items": []}, "invalid_argument", ["items", "empty"],
         "store-items-empty"),
    case("memory_store", {"items": ["just text"]}, "invalid_argument", ["items.0", "object"],
         "store-items-string-item"),
    case("memory_store", {"items": [{"importance": 2}]}, "invalid_argument",
         ["items.0", "content", "required"], "store-item-missing-content"),
    case("memory_store", {"items": [{"content": "x", "bogus": 1}]}, "invalid_argument",
         ["items.0", "bogus"], "store-item-unknown-arg"),
    case("memory_store", {"items": [{"content": "fine"}, {"content": "   "}]},
         "invalid_argument", ["items.1", "whitespace"], "store-item-whitespace"),
    case("memory_store", {"items": [{"content": "fine"}, {"content": "y" * 20001}]},
         "invalid_argument", ["items.1", "20000"], "store-item-oversized"),
    case("memory_store", {"items": [{"content": "a\x00b"}]}, "invalid_argument",
         ["items.0", "NUL"], "store-item-nul"),
    case("memory_store", {"items": [{"content": f"batch {i}"} for i in range(501)]},
         "invalid_argument", ["items", "500", "several batches"], "store-batch-501"),
    case("memory_store", {"items": [{"content": "x"}], "importance": 4}, "invalid_argument",
         ["items", "inside each item"], "store-items-with-top-level-fields"),
    # memory_search --------------------------------------------------------------------
    case("memory_search", {}, "invalid_argument", ["query", "required"], "search-missing-query"),
    case("memory_search", {"query": 5}, "invalid_argument", ["query", "string"],
         "search-query-int"),
    case("memory_search", {"query": None}, "invalid_argument", ["query", "string"],
         "search-query-null"),
    case("memory_search", {"query": ["a", "b"]}, "invalid_argument", ["query", "string"],
         "search-query-list"),
    case("memory_search", {"query": ""}, "invalid_argument", ["query", "empty"],
         "search-query-empty"),
    case("memory_search", {"query": "  \n "}, "invalid_argument", ["query", "whitespace"],
         "search-query-whitespace"),
    case("memory_search", {"query": "x", "top_k": 0}, "invalid_argument", ["top_k", "minimum"],
         "search-top_k-0"),
    case("memory_search", {"query": "x", "top_k": 10000}, "invalid_argument",
         ["top_k", "maximum"], "search-top_k-10000"),
    case("memory_search", {"query": "x", "top_k": "5"}, "invalid_argument",
         ["top_k", "integer"], "search-top_k-string"),
    case("memory_search", {"query": "x", "top_k": None}, "invalid_argument",
         ["top_k", "integer"], "search-top_k-null"),
    case("memory_search", {"query": "x", "offset": -1}, "invalid_argument",
         ["offset", "minimum"], "search-offset-negative"),
    case("memory_search", {"query": "x", "offset": "0"}, "invalid_argument",
         ["offset", "integer"], "search-offset-string"),
    case("memory_search", {"query": "x", "min_importance": 6}, "invalid_argument",
         ["min_importance", "maximum"], "search-min_importance-6"),
    case("memory_search", {"query": "x", "category": "gossip"}, "invalid_argument",
         ["category"], "search-category-unknown"),
    case("memory_search", {"query": "x", "tags": "ops"}, "invalid_argument", ["tags", "array"],
         "search-tags-string"),
    case("memory_search", {"query": "x", "global_search": "yes"}, "invalid_argument",
         ["global_search", "boolean"], "search-global-string"),
    case("memory_search", {"query": "x", "fusion": "magic"}, "invalid_argument",
         ["fusion", "rrf"], "search-fusion-unknown"),
    case("memory_search", {"query": "x", "preview_chars": -1}, "invalid_argument",
         ["preview_chars", "minimum"], "search-preview-negative"),
    case("memory_search", {"query": "x", "limit": 5}, "invalid_argument",
         ["limit", "unexpected"], "search-unknown-arg"),
    # memory_get -----------------------------------------------------------------------
    case("memory_get", {}, "invalid_argument", ["id", "ids", "either"], "get-neither"),
    case("memory_get", {"id": KNOWN, "ids": [KNOWN]}, "invalid_argument", ["id", "ids", "both"],
         "get-both"),
    case("memory_get", {"id": "1"}, "invalid_argument", ["id", "integer"], "get-id-string"),
    case("memory_get", {"id": None}, "invalid_argument", ["id", "integer"], "get-id-null"),
    case("memory_get", {"id": [1]}, "invalid_argument", ["id", "integer"], "get-id-list"),
    case("memory_get", {"id": 0}, "invalid_argument", ["id", "minimum"], "get-id-0"),
    case("memory_get", {"id": -5}, "invalid_argument", ["id", "minimum"], "get-id-negative"),
    case("memory_get", {"id": 2**63}, "invalid_argument", ["id", "maximum"], "get-id-huge"),
    case("memory_get", {"id": UNKNOWN_ID}, "not_found", [str(UNKNOWN_ID), "memory_search"],
         "get-unknown-id"),
    case("memory_get", {"ids": "1,2"}, "invalid_argument", ["ids", "array"], "get-ids-string"),
    case("memory_get", {"ids": {"1": True}}, "invalid_argument", ["ids", "array"],
         "get-ids-object"),
    case("memory_get", {"ids": []}, "invalid_argument", ["ids", "empty"], "get-ids-empty"),
    case("memory_get", {"ids": [KNOWN, "two"]}, "invalid_argument", ["ids.1", "integer"],
         "get-ids-string-item"),
    case("memory_get", {"id": KNOWN, "include_edges": "no"}, "invalid_argument",
         ["include_edges", "boolean"], "get-include_edges-string"),
    case("memory_get", {"id": KNOWN, "full": True}, "invalid_argument", ["full", "unexpected"],
         "get-unknown-arg"),
    # memory_list ----------------------------------------------------------------------
    case("memory_list", {"limit": 0}, "invalid_argument", ["limit", "minimum"], "list-limit-0"),
    case("memory_list", {"limit": 10000}, "invalid_argument", ["limit", "maximum"],
         "list-limit-10000"),
    case("memory_list", {"limit": "5"}, "invalid_argument", ["limit", "integer"],
         "list-limit-string"),
    case("memory_list", {"offset": -1}, "invalid_argument", ["offset", "minimum"],
         "list-offset-negative"),
    case("memory_list", {"offset": None}, "invalid_argument", ["offset", "integer"],
         "list-offset-null"),
    case("memory_list", {"order_by": "random"}, "invalid_argument", ["order_by", "recent"],
         "list-order_by-unknown"),
    case("memory_list", {"topic": 5}, "invalid_argument", ["topic", "string"], "list-topic-int"),
    case("memory_list", {"topic": ""}, "invalid_argument", ["topic", "empty"],
         "list-topic-empty"),
    case("memory_list", {"min_importance": 0}, "invalid_argument",
         ["min_importance", "minimum"], "list-min_importance-0"),
    case("memory_list", {"category": ["learning"]}, "invalid_argument", ["category"],
         "list-category-list"),
    case("memory_list", {"query": "x"}, "invalid_argument", ["query", "unexpected"],
         "list-unknown-arg"),
    case("memory_list", {"since": "last tuesday"}, "invalid_argument",
         ["since", "ISO 8601"], "list-since-words"),
    case("memory_list", {"until": "2026-13-45"}, "invalid_argument", ["until", "ISO 8601"],
         "list-until-no-such-day"),
    case("memory_list", {"since": "9" * 65}, "invalid_argument", ["since", "over the limit"],
         "list-since-huge"),
    case("memory_list", {"scope": "team"}, "invalid_argument", ["scope", "shared"],
         "list-scope-unknown"),
    case("memory_list", {"superseded": "yes"}, "invalid_argument", ["superseded", "boolean"],
         "list-superseded-text"),
    case("memory_list", {"stale": 1}, "invalid_argument", ["stale", "boolean"],
         "list-stale-int"),
    # memory_update --------------------------------------------------------------------
    case("memory_update", {}, "invalid_argument", ["id", "updates"], "update-neither"),
    case("memory_update", {"importance": 2}, "invalid_argument", ["id", "updates"],
         "update-missing-id"),
    case("memory_update", {"id": KNOWN}, "invalid_argument",
         ["nothing to change", "content", "importance"], "update-nothing-to-change"),
    case("memory_update", {"id": "1", "importance": 2}, "invalid_argument", ["id", "integer"],
         "update-id-string"),
    case("memory_update", {"id": None, "importance": 2}, "invalid_argument", ["id", "integer"],
         "update-id-null"),
    case("memory_update", {"id": UNKNOWN_ID, "importance": 2}, "not_found", [str(UNKNOWN_ID)],
         "update-unknown-id"),
    case("memory_update", {"id": KNOWN, "content": ""}, "invalid_argument",
         ["content", "empty"], "update-content-empty"),
    case("memory_update", {"id": KNOWN, "content": "   "}, "invalid_argument",
         ["content", "whitespace"], "update-content-whitespace"),
    case("memory_update", {"id": KNOWN, "content": "z" * 20001}, "invalid_argument",
         ["content", "20000"], "update-content-oversized"),
    case("memory_update", {"id": KNOWN, "content": "a\x00b"}, "invalid_argument",
         ["content", "NUL"], "update-content-nul"),
    case("memory_update", {"id": KNOWN, "content": 7}, "invalid_argument",
         ["content", "string"], "update-content-int"),
    case("memory_update", {"id": KNOWN, "importance": 0}, "invalid_argument",
         ["importance", "minimum"], "update-importance-0"),
    case("memory_update", {"id": KNOWN, "importance": 6}, "invalid_argument",
         ["importance", "maximum"], "update-importance-6"),
    case("memory_update", {"id": KNOWN, "importance": "high"}, "invalid_argument",
         ["importance", "integer"], "update-importance-string"),
    case("memory_update", {"id": KNOWN, "tags": "ops"}, "invalid_argument", ["tags", "array"],
         "update-tags-string"),
    case("memory_update", {"id": KNOWN, "category": None}, "invalid_argument", ["category"],
         "update-category-null"),
    case("memory_update", {"id": KNOWN, "importance": 2, "bogus": 1}, "invalid_argument",
         ["bogus", "unexpected"], "update-unknown-arg"),
    case("memory_update", {"updates": {"id": KNOWN, "importance": 2}}, "invalid_argument",
         ["updates", "array"], "update-updates-object"),
    case("memory_update", {"updates": []}, "invalid_argument", ["updates", "empty"],
         "update-updates-empty"),
    case("memory_update", {"updates": [{"importance": 2}]}, "invalid_argument",
         ["updates.0", "id", "required"], "update-item-missing-id"),
    case("memory_update", {"updates": [{"id": KNOWN}]}, "invalid_argument",
         ["updates.0", "nothing to change"], "update-item-nothing-to-change"),
    case("memory_update", {"updates": [{"id": KNOWN, "content": "\t"}]}, "invalid_argument",
         ["updates.0", "whitespace"], "update-item-whitespace"),
    case("memory_update", {"updates": [{"id": KNOWN, "importance": 2}], "id": KNOWN},
         "invalid_argument", ["updates", "inside each update"], "update-updates-and-id"),
    # memory_delete --------------------------------------------------------------------
    case("memory_delete", {}, "invalid_argument", ["id", "ids", "either"], "delete-neither"),
    case("memory_delete", {"id": KNOWN, "ids": [KNOWN]}, "invalid_argument",
         ["id", "ids", "both"], "delete-both"),
    case("memory_delete", {"id": "x"}, "invalid_argument", ["id", "integer"],
         "delete-id-string"),
    case("memory_delete", {"id": None}, "invalid_argument", ["id", "integer"], "delete-id-null"),
    case("memory_delete", {"id": 0}, "invalid_argument", ["id", "minimum"], "delete-id-0"),
    case("memory_delete", {"ids": "1"}, "invalid_argument", ["ids", "array"],
         "delete-ids-string"),
    case("memory_delete", {"ids": []}, "invalid_argument", ["ids", "empty"], "delete-ids-empty"),
    case("memory_delete", {"ids": [None]}, "invalid_argument", ["ids.0", "integer"],
         "delete-ids-null-item"),
    case("memory_delete", {"id": KNOWN, "force": True}, "invalid_argument",
         ["force", "unexpected"], "delete-unknown-arg"),
    # memory_stats ---------------------------------------------------------------------
    case("memory_stats", {"verbose": True}, "invalid_argument", ["verbose", "unexpected"],
         "stats-unknown-arg"),
    case("memory_stats", {"workspace": "/tmp"}, "invalid_argument", ["workspace", "unexpected"],
         "stats-workspace-arg"),
    # unknown tools --------------------------------------------------------------------
    case("memory_nope", {}, "unknown_tool", ["memory_nope", "memory_store"], "unknown-tool"),
    case("", {}, "unknown_tool", ["known tools", "memory_search"], "empty-tool-name"),
    case("Memory_Store", {"content": "x"}, "unknown_tool", ["memory_store"],
         "unknown-tool-wrong-case"),
]


@pytest.mark.parametrize("tool,args,code,words", BAD)
def test_bad_arguments_are_refused(client, ws, baseline, tool, args, code, words):
    with pytest.raises(ToolFailure) as info:
        client.call_tool(tool, _fill(args, baseline["id"]), str(ws))
    assert_failure(info.value, code, words)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("arguments", [[1, 2], "text", None, 42, True],
                         ids=["list", "string", "null", "number", "bool"])
def test_arguments_that_are_not_an_object(client, ws, baseline, tool, arguments):
    with pytest.raises(ToolFailure) as info:
        client.call_tool(tool, arguments, str(ws))
    assert_failure(info.value, "invalid_argument", ["arguments", "JSON object"])


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("workspace,words", [
    ("/does/not/exist", ["/does/not/exist", "not an existing directory"]),
    ("relative/path", ["relative/path", "absolute"]),
    ("", ["no workspace", "MEMORY_WORKSPACE"]),
    (THIS_FILE, [THIS_FILE, "not an existing directory"]),
    ("/tmp/with\x00nul", ["absolute"]),
], ids=["missing", "relative", "empty", "a-file", "nul"])
def test_bad_workspace(client, baseline, tool, workspace, words):
    with pytest.raises(ToolFailure) as info:
        client.call_tool(tool, VALID[tool], workspace)
    assert_failure(info.value, "invalid_argument", words)


def test_bad_workspace_creates_nothing(client, baseline, tmp_path):
    ghost = tmp_path / "ghost"
    with pytest.raises(ToolFailure):
        client.call_tool("memory_store", {"content": "x"}, str(ghost))
    assert not ghost.exists()


def test_unknown_tool_is_reported_before_the_workspace(client, baseline):
    with pytest.raises(ToolFailure) as info:
        client.call_tool("memory_nope", {}, "/does/not/exist")
    assert_failure(info.value, "unknown_tool", ["memory_nope"])


@pytest.mark.parametrize("raw,words", [
    ("{not json", ["not valid JSON"]),
    ('{"query": "x"', ["not valid JSON"]),
    ("'single quotes'", ["not valid JSON"]),
    ("\x00", ["not valid JSON"]),
    ("[" * 100_000, ["not valid JSON"]),
    ("[1, 2]", ["JSON object"]),
    ("null", ["JSON object"]),
    ('"a string"', ["JSON object"]),
    ("{}", ["query", "required"]),
], ids=["garbage", "truncated", "single-quotes", "nul", "deep-nesting", "array", "null",
        "string", "empty-object"])
def test_raw_arguments_json_over_grpc(client, ws, baseline, raw, words):
    request = pb.CallToolRequest(tool="memory_search", workspace=str(ws), arguments_json=raw,
                                 client="tests raw")
    response = client._connect().CallTool(request, timeout=30)
    assert response.HasField("error"), response.result_json[:200]
    assert_failure(ToolFailure(response.error.code, response.error.message),
                   "invalid_argument", words)


# -- honest outcomes that are not errors -----------------------------------------------------

def test_delete_of_unknown_ids_reports_status(call):
    one = call("memory_delete", id=UNKNOWN_ID)
    assert one == {"status": "not_found", "deleted": [], "missing": [UNKNOWN_ID]}
    kept = call("memory_store", content="delete me, then ask again")["id"]
    partial = call("memory_delete", ids=[kept, UNKNOWN_ID, kept])
    assert partial == {"status": "partial", "deleted": [kept], "missing": [UNKNOWN_ID]}
    again = call("memory_delete", id=kept)
    assert again["status"] == "not_found" and again["missing"] == [kept]


def test_get_with_ids_lists_missing(call):
    kept = call("memory_store", content="a memory to read back")["id"]
    result = call("memory_get", ids=[UNKNOWN_ID, kept, UNKNOWN_ID + 1])
    assert [m["id"] for m in result["memories"]] == [kept]
    assert result["missing"] == [UNKNOWN_ID, UNKNOWN_ID + 1]


def test_batch_update_reports_unknown_ids(call):
    kept = call("memory_store", content="a memory to update in a batch")["id"]
    result = call("memory_update", updates=[{"id": kept, "importance": 5},
                                            {"id": UNKNOWN_ID, "importance": 1}])
    assert result["updated"] == 1 and result["not_found"] == 1
    assert {"id": UNKNOWN_ID, "status": "not_found"} in result["results"]
    assert call("memory_get", id=kept)["importance"] == 5


def test_ids_of_another_workspace_are_unknown(call, ws, baseline):
    theirs = baseline["id"]  # lives in the module's other workspace
    with pytest.raises(ToolFailure) as info:
        call("memory_get", id=theirs)
    assert info.value.code == "not_found"
    assert call("memory_delete", id=theirs)["status"] == "not_found"
    with pytest.raises(ToolFailure) as info:
        call("memory_update", id=theirs, importance=1)
    assert info.value.code == "not_found"
    assert call("memory_get", ws=ws, id=theirs)["importance"] == 3


def test_reads_with_nul_do_not_fail(call):
    call("memory_store", content="plain text memory")
    for tool, args in [("memory_search", {"query": "plain\x00text"}),
                       ("memory_list", {"topic": "to\x00pic"}),
                       ("memory_search", {"query": "plain", "tags": ["a\x00b"]})]:
        try:
            call(tool, **args)
        except ToolFailure as exc:
            assert exc.code == "invalid_argument", exc


# -- regressions: bugs these tests found ---------------------------------------------------

def _refused_or_done(call, tool, **args):
    """Either an invalid_argument naming the field, or a normal result; never `internal`."""
    try:
        return call(tool, **args)
    except ToolFailure as exc:
        assert exc.code == "invalid_argument", f"{exc.code}: {exc.message}"
        return None


def test_store_content_and_items_both(call):
    with pytest.raises(ToolFailure) as info:
        call("memory_store", content="single", items=[{"content": "batched"}])
    assert_failure(info.value, "invalid_argument", ["content", "items"])


@pytest.mark.parametrize("tool,args", [
    ("memory_search", {"query": "x", "top_k": 2.0}),
    ("memory_search", {"query": "x", "offset": 1.0}),
    ("memory_search", {"query": "x", "preview_chars": 5.0}),
    ("memory_list", {"limit": 2.0}),
    ("memory_list", {"offset": 1.0}),
    ("memory_list", {"preview_chars": 5.0}),
], ids=["search-top_k", "search-offset", "search-preview", "list-limit", "list-offset",
        "list-preview"])
def test_float_integers_do_not_crash(call, tool, args):
    call("memory_store", content="something to page through")
    _refused_or_done(call, tool, **args)


def test_float_importance_is_normalised_or_refused(call):
    stored = _refused_or_done(call, "memory_store", content="float importance", importance=3.0)
    if stored is not None:
        assert type(stored["importance"]) is int, stored
        assert type(call("memory_get", id=stored["id"])["importance"]) is int


@pytest.mark.parametrize("tool,field", [("memory_store", "content"),
                                        ("memory_search", "query")],
                         ids=["store", "search"])
def test_lone_surrogate_is_refused(call, tool, field):
    _refused_or_done(call, tool, **{field: "broken \ud800 text"})


def test_nul_in_tags_is_refused(call):
    stored = _refused_or_done(call, "memory_store", content="tagged with a NUL",
                              tags=["a\x00b"])
    if stored is not None:
        tags = call("memory_get", id=stored["id"])["tags"]
        assert not any("\x00" in t for t in tags), tags


@pytest.mark.parametrize("tool,args", [
    ("memory_search", {"query": "q" * 4001}),
    ("memory_get", {"ids": _ids(501)}),
    ("memory_delete", {"ids": _ids(501)}),
    ("memory_update", {"updates": [{"id": i, "importance": 2} for i in _ids(501)]}),
], ids=["search-query-4001", "get-ids-501", "delete-ids-501", "update-updates-501"])
def test_oversized_values_say_what_is_wrong(call, tool, args):
    with pytest.raises(ToolFailure) as info:
        call(tool, **args)
    assert info.value.code == "invalid_argument"
    message = info.value.message
    assert "over the limit of" in message and len(message) < 200, message[-120:]
    assert ("4000" in message) or ("500" in message), message


def test_many_workspaces_can_be_opened(fresh_daemon, tmp_path):
    fresh_daemon.start()
    client = fresh_daemon.client(autostart=False)
    try:
        for n in range(20):
            project = tmp_path / f"project-{n}"
            project.mkdir()
            client.call_tool("memory_stats", {}, str(project))
    finally:
        client.close()


# -- the same through the real MCP shim -----------------------------------------------------

def test_bad_input_through_the_mcp_shim(daemon, scratch):
    cases = [
        ("memory_store", {"content": "   "}, ["invalid_argument", "whitespace"]),
        ("memory_store", {"content": "x" * 20001}, ["invalid_argument", "20000"]),
        ("memory_store", {"content": 5}, ["invalid_argument", "content"]),
        ("memory_search", {"query": "x", "top_k": 0}, ["invalid_argument", "top_k"]),
        ("memory_get", {"id": UNKNOWN_ID}, ["not_found", str(UNKNOWN_ID)]),
        ("memory_delete", {}, ["invalid_argument", "id"]),
        ("memory_list", {"offset": -1}, ["invalid_argument", "offset"]),
        ("memory_update", {"id": 1}, ["invalid_argument", "nothing to change"]),
        ("memory_stats", {"extra": 1}, ["invalid_argument", "extra"]),
    ]

    async def run():
        async with daemon.mcp(scratch) as session:
            for tool, args, words in cases:
                result = await session.call_tool(tool, args)
                text = error_text(result)
                assert "Traceback" not in text, text
                assert all(w in text for w in words), (tool, args, text)
            # An unknown tool is a protocol error (invalid params), as the MCP specification's
            # tools page has it, not a tool result.
            from mcp.shared.exceptions import MCPError
            with pytest.raises(MCPError) as unknown:
                await session.call_tool("memory_nope", {})
            assert unknown.value.code == -32602
            assert "memory_nope" in unknown.value.message and "memory_store" in \
                unknown.value.message
            ok = await session.call_tool("memory_store", {"content": "shim still works"})
            assert result_json(ok)["status"] == "stored"

    anyio.run(run)


@pytest.mark.parametrize("bad_workspace,word", [("/does/not/exist", "not an existing directory"),
                                                ("relative/nowhere", "not an existing directory")],
                         ids=["missing", "relative"])
def test_bad_workspace_through_the_mcp_shim(daemon, scratch, bad_workspace, word):
    async def run():
        async with daemon.mcp(scratch, MEMORY_WORKSPACE=bad_workspace) as session:
            text = error_text(await session.call_tool("memory_stats", {}))
            assert "Traceback" not in text
            assert text.startswith("invalid_argument:") and word in text, text

    anyio.run(run)


# -- after all of the above -------------------------------------------------------------------

def test_daemon_still_serves_after_bad_input(client, ws, baseline):
    assert client.status().pid == baseline["pid"]
    # Nothing the refused calls carried was written; the baseline memory is untouched.
    listed = client.call_tool("memory_list", {}, str(ws))
    assert listed["total"] == 1
    assert listed["memories"][0]["content"] == BASELINE_TEXT
    assert listed["memories"][0]["importance"] == 3
    stored = client.call_tool("memory_store", {"content": "Round trip after the bad input: "
                                               "the daemon still stores and finds"}, str(ws))
    assert stored["status"] == "stored"
    found = client.call_tool("memory_search", {"query": "round trip after bad input"}, str(ws))
    assert found["results"][0]["id"] == stored["id"]
    health = client.call_tool("memory_stats", {}, str(ws))["index_health"]
    assert health["healthy"], health
    assert client.status().pid == baseline["pid"]
