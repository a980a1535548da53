"""operations/transfer.py, exporting.py and importing.py in process: a file exported from one
workspace and imported into another, an import repeated, and hostile files refused with an
error that names the place, before anything of them is written."""
import json

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations.exporting import export_memories
from memnest_daemon.operations.importing import import_file
from memnest_daemon.operations.linking import Link, keep_separate, relate
from memnest_daemon.operations.transfer import FORMAT, SIGNATURE, parse_export
from support import stored_memories

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.",
         "Database migrations run from the deploy pipeline before the new pods start.")


def _file(ctx, name: str, doc) -> str:
    """`doc` (JSON, or bytes as they are) written into the workspace; its relative path."""
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode("utf-8")
    path = f"{ctx.workspace}/{name}"
    with open(path, "wb") as out:
        out.write(data)
    return name


def _doc(*rows, **parts):
    return {"format": FORMAT, "version": 1, "memories": list(rows), **parts}


def test_an_export_imported_elsewhere_brings_memories_links_and_verdicts(ctx, tmp_path):
    a, b, c = stored_memories(ctx, *TEXTS, tags=("ops",))
    relate(ctx, [Link(a, b, "SUPERSEDES"), Link(b, c, "EXPLAINS")], batch=True)
    keep_separate(ctx, [(a, c)])
    done = export_memories(ctx, None, with_paths=False)
    assert done.counts == {"memories": 3, "edges": 2, "keep_separate": 1}
    data = open(done.path, "rb").read()
    assert data.startswith(SIGNATURE) and len(data) == done.size
    doc = json.loads(data)
    assert list(doc)[:7] == ["format", "version", "exported_at", "generator",
                             "embedding_model", "counts", "memories"]
    assert "workspace" not in doc and all("workspace" not in row for row in doc["memories"])

    there = ctx.other(str(tmp_path / "there"))
    (tmp_path / "there").mkdir()
    imported = import_file(there, done.path)
    assert (imported.memories.stored, imported.memories.duplicate) == (3, 0)
    assert (imported.edges.new, imported.verdicts.new) == (2, 1)
    theirs = {m.content: m.id for m in there.store.in_scope(there.workspace)}
    assert set(theirs) == set(TEXTS) and not set(theirs.values()) & {a, b, c}
    assert ("SUPERSEDES", theirs[TEXTS[0]], theirs[TEXTS[1]]) in there.store.graph.edges
    assert there.store.graph.kept_separate(theirs[TEXTS[0]], theirs[TEXTS[2]])
    assert all(m.origin_via == "import" for m in there.store.in_scope(there.workspace))


def test_importing_the_same_file_again_changes_nothing(ctx):
    a, b = stored_memories(ctx, *TEXTS[:2])
    relate(ctx, [Link(a, b)], batch=True)
    path = export_memories(ctx, None, with_paths=True).path
    assert json.loads(open(path).read())["workspace"] == ctx.workspace
    again = import_file(ctx, path)
    assert (again.memories.duplicate, again.memories.stored, again.existing_changed) == (2, 0, 0)
    assert (again.edges.new, again.edges.exists) == (0, 1)
    assert len(ctx.store.in_scope(ctx.workspace)) == 2


def test_links_between_items_that_became_one_memory_are_skipped(ctx):
    path = _file(ctx, "same.json", _doc(
        {"key": "a", "content": TEXTS[0]}, {"key": "b", "content": "  " + TEXTS[0] + " "},
        edges=[{"type": "RELATED_TO", "from": "a", "to": "b"}], keep_separate=[["a", "b"]]))
    done = import_file(ctx, path)
    assert (done.memories.stored, done.memories.duplicate) == (1, 1)
    assert (done.edges.skipped, done.verdicts.skipped) == (1, 1)


def test_admission_applies_to_imported_text(ctx):
    secret = "AKIA" + "ABCDEFGHIJKLMNOP"
    parsed = parse_export(json.dumps(_doc(
        {"key": "a", "content": f"Deploys use the key {secret} <private>not this</private>"},
        {"key": "b", "content": TEXTS[1],
         "code": {"anchors": [{"path": "../outside.py"}, {"path": "src/app.py"}]}},
    )).encode(), "f.json", ctx.settings)
    assert secret not in parsed.items[0].content and "not this" not in parsed.items[0].content
    assert "memories.0" in parsed.left_out.report(single=False)["privacy"]
    anchors = json.loads(parsed.items[1].code.to_json())["anchors"]
    assert anchors == [{"path": "src/app.py"}]  # a path leaving the workspace is left out


def test_a_cancelled_import_writes_nothing(ctx):
    path = _file(ctx, "ok.json", _doc({"key": "a", "content": TEXTS[0]}))
    ctx.gone = True
    with pytest.raises(ToolError) as cancelled:
        import_file(ctx, path)
    assert cancelled.value.code == "cancelled"
    assert ctx.store.in_scope(ctx.workspace) == []


ROW = {"key": "a", "content": TEXTS[0]}
HOSTILE = {
    "not UTF-8": (b"\xff\xfe{}", "not UTF-8 text (byte 0)"),
    "not JSON": (b'{"format": "memnest-export",', "not valid JSON"),
    "NaN": (b'{"format": "memnest-export", "version": NaN}', "NaN is not valid JSON"),
    "a key twice": (b'{"format": "memnest-export", "format": "x"}', "appears twice"),
    "nested deeply": (b'{"format": "memnest-export", "x": ' + b"[" * 100_000
                      + b"]" * 100_000 + b"}", "nested too deeply"),
    "a list": ([ROW], 'no "format": "memnest-export" field'),
    "another format": ({"format": "other", "version": 1}, "was it written by memory_export?"),
    "version text": ({"format": FORMAT, "version": "1", "memories": []},
                     '"version" must be an integer'),
    "version true": ({"format": FORMAT, "version": True, "memories": []},
                     '"version" must be an integer'),
    "newer version": ({"format": FORMAT, "version": 2, "memories": []},
                      "written by a newer memnest"),
    "memories not a list": (_doc() | {"memories": {"a": ROW}}, "memories: "),
    "memory not an object": (_doc("just text"), "memories.0: 'just text' is not of type"),
    "unknown field": (_doc(ROW | {"embedding": [0.1]}), "memories.0: Additional properties"),
    "huge key": (_doc({"key": "k" * 5000, "content": "x"}), "memories.0.key: "),
    "huge content": (_doc({"key": "a", "content": "word " * 5000}),
                     "memories.0.content: 24999 characters, over the limit of 20000"),
    "blank content": (_doc({"key": "a", "content": " \n "}),
                      "memories.0.content: empty or only whitespace"),
    "NUL in content": (_doc({"key": "a", "content": "a\x00b"}), "contains a NUL character"),
    "lone surrogate": (b'{"format": "memnest-export", "version": 1, "memories": '
                       b'[{"key": "a", "content": "x\\ud800"}]}', "memories.0.content"),
    "importance 9": (_doc(ROW | {"importance": 9}), "memories.0.importance"),
    "float count": (_doc(ROW | {"access_count": 2.0}), "memories.0.access_count"),
    "huge count": (_doc(ROW | {"access_count": 2**60}), "memories.0.access_count"),
    "bad time": (_doc(ROW | {"created_at": "last tuesday"}),
                 "memories.0.created_at: 'last tuesday' is not an ISO 8601 time"),
    "key used twice": (_doc(ROW, ROW | {"content": TEXTS[1]}),
                       "memories.1: key 'a' is used twice (memories.0)"),
    "code too big": (_doc(ROW | {"code": {"branch": "b" * 20_000}}),
                     "memories.0.code: 20013 characters, over the limit of 16384"),
    "unknown relation": (_doc(ROW, {"key": "b", "content": TEXTS[1]},
                              edges=[{"type": "CAUSES", "from": "a", "to": "b"}]),
                         "edges.0.type: 'CAUSES' is not one of"),
    "edge to nowhere": (_doc(ROW, edges=[{"type": "RELATED_TO", "from": "a", "to": "zz"}]),
                        "edges.0.to: no memory with key 'zz' in this file"),
    "self edge": (_doc(ROW, edges=[{"type": "RELATED_TO", "from": "a", "to": "a"}]),
                  "edges.0: memory 'a' is related to itself"),
    "verdict of one": (_doc(ROW, keep_separate=[["a", "a"]]),
                       "keep_separate.0: a pair of one memory ('a')"),
    "verdict of three": (_doc(ROW, keep_separate=[["a", "a", "a"]]), "keep_separate.0"),
    "cut short": (_doc(ROW, counts={"memories": 2}),
                  "counts.memories says 2 but the file holds 1; it was cut short or edited"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_file_is_refused_clearly_and_writes_nothing(ctx, case):
    stored_memories(ctx, TEXTS[2])
    doc, expected = HOSTILE[case]
    path = _file(ctx, "hostile.json", doc)
    with pytest.raises(ToolError) as refused:
        import_file(ctx, path)
    message = str(refused.value)
    assert refused.value.code == "invalid_argument"
    assert message.startswith(f"{ctx.workspace}/hostile.json is not a usable memnest export: ")
    assert expected in message and len(message) < 1000
    assert [m.content for m in ctx.store.in_scope(ctx.workspace)] == [TEXTS[2]]
    assert not ctx.store.graph.edges and not ctx.store.graph.separate


def test_schema_errors_name_the_first_few_places_in_file_order(ctx):
    rows = [{"key": f"k{n}", "content": "x", "importance": 0} for n in range(10)]
    with pytest.raises(ToolError) as refused:
        parse_export(json.dumps(_doc(*rows)).encode(), "f.json", ctx.settings)
    message = str(refused.value)
    assert "memories.0.importance" in message and "memories.2.importance" in message
    assert "memories.3." not in message


def test_an_item_a_memory_here_already_covers_is_merged_without_changing_it(ctx):
    longer = ("The billing service retries failed webhooks three times with exponential "
              "backoff and random jitter.")
    here, = stored_memories(ctx, longer, tags=("billing", "webhooks"))
    before = ctx.store.catalog[here]
    path = _file(ctx, "close.json", _doc({
        "key": "a", "tags": ["billing"],
        "content": "The billing service retries failed webhooks three times with "
                   "exponential backoff and jitter."}))
    done = import_file(ctx, path)
    assert (done.memories.merged, done.memories.stored, done.existing_changed) == (1, 0, 0)
    assert ctx.store.catalog[here] == before and len(ctx.store.catalog) == 1
