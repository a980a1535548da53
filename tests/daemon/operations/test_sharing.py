"""operations/sharing.py in process: share and unshare against a real store and its
workspace's .memnest/shared/ folder, and sync_now bringing another workspace's shared file
in."""
import os
import shutil

import pytest
from memnest_daemon.core.errors import ToolError
from memnest_daemon.operations.sharing import share, sync_now
from support import stored_memories

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.")


def _on_disk(ctx, relative: str) -> bool:
    return os.path.isfile(os.path.join(ctx.workspace, relative))


def test_share_writes_each_memorys_file_once(ctx):
    a, b = stored_memories(ctx, *TEXTS)
    done = share(ctx, [a, 999, a])
    assert (done.shared, done.changed, done.missing) == (True, [a], [999])
    shared, = done.memories
    assert shared.id == a and len(shared.global_id) == 32
    assert shared.file == f".memnest/shared/{shared.global_id}.json" and _on_disk(ctx, shared.file)
    assert ctx.store.catalog[a].scope == "shared" and ctx.store.catalog[b].scope == "private"
    again = share(ctx, [a])
    assert again.changed == [] and again.memories[0].global_id == shared.global_id


def test_unshare_removes_the_file_and_retires_the_id(ctx):
    a, = stored_memories(ctx, TEXTS[0])
    first = share(ctx, [a]).memories[0]
    done = share(ctx, [a], shared=False)
    assert (done.shared, done.changed) == (False, [a])
    assert done.removed_files == [first.file] and not _on_disk(ctx, first.file)
    assert done.retired_global_ids == [first.global_id]
    assert ctx.store.catalog[a].scope == "private" and ctx.store.catalog[a].global_id == ""
    assert share(ctx, [a]).memories[0].global_id != first.global_id  # a new id, for good


def test_a_memory_holding_a_secret_is_not_shared_and_nothing_changes(ctx):
    a, b = stored_memories(ctx, TEXTS[0], "The deploy key is AKIA" + "ABCDEFGHIJKLMNOP")
    with pytest.raises(ToolError) as refused:
        share(ctx, [a, b])
    assert refused.value.code == "invalid_argument"
    assert f"memory {b}" in str(refused.value) and "Nothing was shared" in str(refused.value)
    assert all(ctx.store.catalog[i].scope == "private" for i in (a, b))
    assert not os.path.exists(os.path.join(ctx.workspace, ".memnest", "shared")) or \
        os.listdir(os.path.join(ctx.workspace, ".memnest", "shared")) == []


def test_a_cancelled_share_changes_nothing(ctx):
    a, = stored_memories(ctx, TEXTS[0])
    ctx.gone = True
    with pytest.raises(ToolError):
        share(ctx, [a])
    assert ctx.store.catalog[a].scope == "private"


def test_sync_now_brings_a_teammates_file_in(ctx, tmp_path):
    a, = stored_memories(ctx, TEXTS[0])
    file = share(ctx, [a]).memories[0].file
    (tmp_path / "teammate").mkdir()
    teammate = ctx.other(str(tmp_path / "teammate"))
    empty = sync_now(teammate)
    assert empty.shared_memories == 0 and empty.problems == [] and list(empty.ignored) == []
    assert empty.folder == os.path.join(teammate.workspace, ".memnest", "shared")
    os.makedirs(empty.folder)
    shutil.copy(os.path.join(ctx.workspace, file), empty.folder)
    done = sync_now(teammate)
    came_in = [entry for report in done.reports for entry in report.came_in]
    assert len(came_in) == 1 and done.shared_memories == 1
    theirs, = teammate.store.in_scope(teammate.workspace)
    assert theirs.content == TEXTS[0] and theirs.scope == "shared" and theirs.id != a
    quiet = sync_now(teammate, everything=True)
    assert [entry for report in quiet.reports for entry in report.came_in] == []


def test_sync_now_reports_a_file_it_cannot_read(ctx):
    folder = os.path.join(ctx.workspace, ".memnest", "shared")
    os.makedirs(folder)
    with open(os.path.join(folder, "0" * 32 + ".json"), "w") as out:
        out.write("<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> theirs\n")
    done = sync_now(ctx)
    assert len(done.problems) == 1 and ("0" * 32) in done.problems[0]
    assert done.shared_memories == 0
