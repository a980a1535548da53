"""operations/upkeep.py in process: reindex rebuilds from the database and counts; the check
of everything derived finds damage, repairs what it can and says so as progress; a dream's
dry run plans without writing, its gates hold unless forced."""
from memnest_daemon.operations.upkeep import check_derived, consolidate, reindex
from memnest_daemon.store.store import MemoryStore
from support import OperationContext, stored_memories

TEXTS = ("The billing service retries webhooks three times with exponential backoff.",
         "The frontend is built with Vite and deployed to the CDN from the main branch.",
         "Database migrations run with alembic from the ops container, never by hand.")


def test_reindex_rebuilds_what_was_lost_and_counts(ctx):
    ids = stored_memories(ctx, *TEXTS)
    ctx.store.keywords.remove_many(ids[:2])  # an index that lost entries behind the store
    done = reindex(ctx)
    assert (done.memories, done.vector_indexed, done.keyword_indexed) == (3, 3, 3)
    assert set(ctx.store.keywords.ids()) == set(ids)
    assert ctx.progressed[0][:2] == (0, 1) and ctx.progressed[-1][:2] == (1, 1)


def test_check_finds_damage_then_repair_fixes_it(ctx):
    ids = stored_memories(ctx, *TEXTS)
    assert check_derived(ctx)["healthy"]
    ctx.store.keywords.remove_many([ids[1]])
    found = check_derived(ctx)
    assert not found["healthy"]
    assert "missing_from_keyword_index" in found["findings"]["by_kind"]
    repaired = check_derived(ctx, repair=True)
    assert repaired["healthy"] and repaired["repaired"]["count"] >= 1
    assert ids[1] in ctx.store.keywords.ids()
    assert [p[2] for p in ctx.progressed][-2:] == ["verifying", "done"]


def test_a_dream_of_a_quiet_workspace_is_skipped_unless_forced(ctx):
    stored_memories(ctx, *TEXTS)
    skipped = consolidate(ctx)
    assert skipped["status"] == "skipped" and not skipped["gates"]["open"]
    planned = consolidate(ctx, dry_run=True, force=True)
    assert planned["status"] == "planned" and planned["dry_run"]


def test_a_dry_run_plans_a_merge_and_writes_nothing(tmp_path):
    # stored without merging (threshold over 1), as twins a dream would merge
    ctx = OperationContext(tmp_path, dedup_threshold=1.01)
    try:
        ids = stored_memories(ctx, "The nightly job restarts service alpha at 2am.",
                              "The nightly job restarts service alpha at 2am!")
        planned = consolidate(ctx, dry_run=True, force=True)
        assert [sorted((m["survivor"], m["absorbed"])) for m in planned["would_merge"]] == \
            [sorted(ids)]
        ctx.store.close()
        ctx.store = MemoryStore(str(tmp_path / "memory.lbug"), ctx.embedder.name,
                                ctx.embedder.dim, 64, 1, embed=ctx.embedder.embed)
        assert sorted(ctx.store.catalog) == sorted(ids)  # both still in the database

        done = consolidate(ctx, force=True)
        assert done["status"] == "done" and len(done["merged"]) == 1
        assert len(ctx.store.catalog) == 1
    finally:
        ctx.close()


def test_what_the_last_dream_did_is_kept_and_a_damaged_record_reads_as_none(ctx):
    from memnest_daemon.curation.dream import last_dream
    stored_memories(ctx, *TEXTS)
    assert last_dream(ctx.store, ctx.workspace) is None
    done = consolidate(ctx, False, True)
    kept = last_dream(ctx.store, ctx.workspace)
    assert kept is not None and kept["merged"] == len(done["merged"])
    assert kept["at"].endswith("Z") and kept["duration_ms"] >= 0
    ctx.store.db.set_meta(f"dream:{ctx.workspace}:last_report", '{"at": 1, "merged": "x"}')
    assert last_dream(ctx.store, ctx.workspace) is None
