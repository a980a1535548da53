"""The capture judge (curation/capture.py): the labelled corpus's targets, and memory_store
refusing junk, storing the rest, folding restatements in, through a real daemon."""
import json
import sys
from pathlib import Path

import anyio
import pytest
from memnest_daemon.curation import capture, values
from memnest_daemon.curation.capture import Neighbour, judge
from memnest_shims.client import ToolFailure

from support import error_text, result_json
from work import counted

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import capture_quality  # noqa: E402  (bench/capture_quality.py: the measurement itself)

TARGET = 5.0  # percent: junk kept, and good memories lost


@pytest.fixture(scope="module")
def embed():
    return capture_quality.embedder()


def test_the_corpus_meets_its_targets(embed):
    candidates = capture_quality.load("candidates.jsonl")
    existing = capture_quality.load("existing.jsonl")
    assert len(candidates) >= 240 and {c["split"] for c in candidates} == {"tune", "held_out"}
    judged = capture_quality.verdicts(candidates, existing, embed)
    f = capture_quality.figures(list(zip(candidates, judged)))
    shown = [f"{c['label']} {c['kind']} -> {v.kind}: {c['content'][:80]}"
             for c, v in f["junk_kept"] + f["good_lost"]]
    assert f["junk_kept_pct"] <= TARGET and f["good_lost_pct"] <= TARGET, "\n".join(shown)


def test_lessons_that_hold_a_trace_or_a_path_are_kept():
    assert judge("Traceback (most recent call last):\n  File \"app/x.py\", line 3, in f\n"
                 "KeyError: 'id'\nThe webhook sends no id for test events; skip those "
                 "instead of crashing.").keep
    assert judge("Config is read only in app/settings.py; never read os.environ elsewhere.").keep
    assert not judge("Traceback (most recent call last):\n  File \"app/x.py\", line 3, in f\n"
                     "KeyError: 'id'").keep
    assert judge("src/a.py\nsrc/b.py\nsrc/c.py\nsrc/d.py").kind == "file_listing"


def test_short_texts_are_not_judged():
    for text in ("x", "hello", "alpha beta", "fine", "batch 3", "only in the project",
                 "Releases are cut on Tuesdays"):
        assert judge(text).keep, text


def test_a_restatement_needs_closeness_and_nothing_new():
    memory = "Deploys go out on Tuesdays after the standup, from the release branch."
    again = "Deploys happen Tuesdays after standup from the release branch."
    assert judge(again, [Neighbour(7, memory, 0.9)]).restates == 7
    assert judge(again, [Neighbour(7, memory, 0.6)]).keep  # not close enough
    newer = "Deploys go out on Tuesdays after the standup, and on Thursdays since v2.4."
    assert judge(newer, [Neighbour(7, memory, 0.9)]).keep  # names something new


@pytest.mark.parametrize("text", [
    "a/" * 200_000, "at " + "a" * 397 + "\n", "\x00" * 50_000 + " word " * 10,
    "\ud800 lone surrogate and more words", "e\u0301\u202e\U0001F600 " * 50_000,
    "File \"" + "x" * 300 + "\", line 1\n", "+\n-\n" * 100_000, "│ ├── a.py\n" * 20_000,
    "`" * 100_000, "word " * 200_000, "Error: " * 100_000,
])
def test_hostile_text_neither_crashes_the_judge_nor_slows_it(text):
    """Every line is matched once on a bounded prefix: the work grows with the text, no
    faster. Counted, not timed (tests/work.py): the lines of capture.py and values.py run and
    the characters they hand to their regular expressions, for the text and twice the text."""
    repeated = text * max(1, 20_000 // len(text))  # at least the store's default limit
    verdict = judge(repeated, [Neighbour(1, repeated, 0.99)])
    assert verdict.kind

    def judged(content: str) -> None:
        judge(content, [Neighbour(1, content, 0.99)])
    once = counted(judged, repeated, modules=(capture, values))
    twice = counted(judged, repeated * 2, modules=(capture, values))
    assert twice.total < 2.5 * once.total, (once.total, twice.total)


# -- through the daemon ----------------------------------------------------------------------

FILE_LISTING = "src/\n  index.ts\n  app.ts\n  routes/\n    users.ts\n    orders.ts"
PROGRESS = "Updated src/components/Header.tsx to add the new logo and adjusted the padding."
LESSON = ("Postgres CREATE INDEX locks writes on the table; on production always use CREATE "
          "INDEX CONCURRENTLY, outside a transaction.")


def test_a_junk_store_is_refused_with_what_to_store_instead(call):
    with pytest.raises(ToolFailure) as info:
        call("memory_store", content=FILE_LISTING)
    assert info.value.code == "invalid_argument"
    assert "file listing" in info.value.message and "keep_as_is" in info.value.message
    assert "Traceback" not in info.value.message
    assert call("memory_list")["total"] == 0
    kept = call("memory_store", content=FILE_LISTING, keep_as_is=True)
    assert kept["status"] == "stored"
    assert call("memory_get", id=kept["id"])["content"] == FILE_LISTING
    assert call("memory_store", content=LESSON, category="learning")["status"] == "stored"


def test_a_batch_reports_refused_items_and_stores_the_others(call):
    out = call("memory_store", items=[
        {"content": LESSON, "category": "learning"},
        {"content": PROGRESS},
        {"content": "I hope this helps! Feel free to ask if you have more questions."},
        {"content": PROGRESS, "keep_as_is": True},
    ])
    statuses = [r["status"] for r in out["results"]]
    assert statuses == ["stored", "refused", "refused", "stored"]
    assert out["refused"] == 2 and out["stored"] == 2
    assert out["results"][1]["kind"] == "progress_note"
    assert "keep_as_is" in out["results"][1]["reason"] and "id" not in out["results"][1]
    assert out["results"][2]["kind"] == "chatter"
    assert call("memory_list")["total"] == 2
    with pytest.raises(ToolFailure):  # keep_as_is belongs to each item in a batch
        call("memory_store", items=[{"content": PROGRESS}], keep_as_is=True)


def test_a_restatement_becomes_a_duplicate_of_the_memory_it_restates(call):
    existing = capture_quality.load("existing.jsonl")
    first = call("memory_store", content=existing[0]["content"], category="decision",
                 importance=3)
    again = call("memory_store", content="We use Postgres 15 with SQLAlchemy 2.0 for the API, "
                 "and Alembic handles migrations (migrations/ folder).", category="decision")
    assert again["status"] == "duplicate" and again["id"] == first["id"]
    assert "memory_update" in again["capture"]
    assert again["importance"] == 4
    assert call("memory_list")["total"] == 1
    new_fact = call("memory_store", category="decision", content=(
        "The API's Alembic migrations must be generated with `alembic revision "
        "--autogenerate` and then hand-checked: autogenerate misses server_default changes."))
    assert new_fact["status"] == "stored"
    batch = call("memory_store", items=[{"content": "Go services: Go 1.22, golangci-lint "
                                                    "configured by .golangci.yml."},
                                        {"content": "Reminder: the API is on PostgreSQL 15 "
                                                    "+ SQLAlchemy 2.0, migrations through "
                                                    "Alembic.", "category": "decision"}])
    assert [r["status"] for r in batch["results"]] == ["stored", "duplicate"]
    assert batch["results"][1]["id"] == first["id"]
    assert call("memory_list")["total"] == 3


def test_updates_are_not_judged(call):
    stored = call("memory_store", content=LESSON)
    updated = call("memory_update", id=stored["id"], content=PROGRESS)
    assert updated["status"] == "updated"


def test_through_the_shim_a_refusal_is_a_tool_error(daemon, workspace):
    async def body():
        async with daemon.mcp(workspace) as s:
            text = error_text(await s.call_tool("memory_store", {"content": PROGRESS}))
            assert "what was done in this turn" in text and "keep_as_is" in text
            assert "Traceback" not in text
            stored = result_json(await s.call_tool("memory_store", {"content": LESSON}))
            assert stored["status"] == "stored"
    anyio.run(body)


def test_the_judge_can_be_turned_off(fresh_daemon, workspace):
    fresh_daemon.env["MEMORY_CAPTURE_JUDGE"] = "off"
    fresh_daemon.start()
    client = fresh_daemon.client()
    try:
        out = client.call_tool("memory_store", {"content": PROGRESS}, str(workspace))
        assert out["status"] == "stored"
        assert json.dumps(out).find("refused") == -1
    finally:
        client.close()
