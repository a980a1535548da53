"""operations/code_checks.py in process: code that only moved is re-anchored in the
database, code that changed ranks lower, and memory_stale's review list."""
from pathlib import Path

import pytest
from memnest_daemon.core.anchors import NO_CODE
from memnest_daemon.operations import code_checks, recall
from memnest_daemon.operations.recall import Query
from memnest_daemon.operations.remember import Entry, remember
from support import OperationContext

SOURCE = "import os\n\n\ndef send(x):\n    return os.path.join(x, 'y')\n"
MEMORY = "send() in src/app.py joins the upload directory with os.path.join, never with +."


@pytest.fixture
def ctx(tmp_path):
    context = OperationContext(tmp_path)
    (Path(context.workspace) / "src").mkdir()
    (Path(context.workspace) / "src/app.py").write_text(SOURCE)
    yield context
    context.close()


def _anchored(ctx, anchor: dict) -> int:
    done = remember(ctx, [Entry(MEMORY, anchors=[anchor], auto_anchor=False)], batch=False)
    return done.outcomes[0].memory.id


def _lines(ctx, memory_id: int) -> list[tuple[int, int]]:
    context = ctx.store.catalog[memory_id].code
    return [(a.start, a.end) for a in context.anchors]


def test_lines_that_only_moved_are_reanchored_where_they_are_now(ctx):
    memory_id = _anchored(ctx, {"path": "src/app.py", "lines": "4-5"})
    assert _lines(ctx, memory_id) == [(4, 5)]
    (Path(ctx.workspace) / "src/app.py").write_text("# a header\n\n" + SOURCE)
    page = recall.search(ctx, Query("how is the upload directory joined"))
    assert page.hits[0].code.state == "moved" and not page.hits[0].code.stale
    assert _lines(ctx, memory_id) == [(6, 7)]  # recall wrote the new place


def test_rank_by_code_demotes_a_stale_memory_below_a_fresh_one(ctx):
    stale_id = _anchored(ctx, {"path": "src/app.py", "symbol": "send"})
    (Path(ctx.workspace) / "src/app.py").write_text(SOURCE.replace("os.path.join(x, 'y')",
                                                                   "x + '/y'"))
    with ctx.store.reading():
        memory = ctx.store.catalog[stale_id]
    from memnest_daemon.search.ranking import Ranked
    ranked = [Ranked(memory, 1.0, {}), Ranked(memory.copy(id=999, code=NO_CODE), 0.9, {})]
    reordered, found = code_checks.rank_by_code(ranked, shown=2)
    assert [r.memory.id for r in reordered] == [999, stale_id]
    assert found[stale_id].state == "changed" and reordered[1].parts["code"] < 0


def test_stale_lists_changed_code_by_file_and_moved_code_when_asked(ctx):
    changed = _anchored(ctx, {"path": "src/app.py", "symbol": "send"})
    remember(ctx, [Entry("The web frontend is deployed from the main branch by CI.")],
             batch=False)
    (Path(ctx.workspace) / "src/app.py").write_text(SOURCE.replace("'y'", "'z'"))
    report = code_checks.stale(ctx, include_moved=False).report
    assert report["anchored"] == 1 and report["stale"] == 1
    assert [f["path"] for f in report["files"]] == ["src/app.py"]
    assert [m["id"] for m in report["files"][0]["memories"]] == [changed]
    assert report["files"][0]["memories"][0]["state"] == "changed" and "hint" in report


def test_stale_is_empty_when_the_code_holds(ctx):
    _anchored(ctx, {"path": "src/app.py", "symbol": "send"})
    report = code_checks.stale(ctx, include_moved=True).report
    assert (report["anchored"], report["stale"], report["files"]) == (1, 0, [])
