"""Team sync's phases (daemon/team/sync.py) on a real store: a LadybugDB file in a temp
folder opened by the store registry, which gives it its team state, and the offline model
in process. No daemon: the phases are called one by one, then as `sync` runs them."""
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from memnest_daemon.core.config import Settings
from memnest_daemon.curation.ingest import Item, ingest
from memnest_daemon.model.embedder import Embedder
from memnest_daemon.store.registry import StoreRegistry
from memnest_daemon.team import sync
from memnest_daemon.team.format import MAX_FILE_BYTES
from memnest_daemon.team.outgoing import open_team
from memnest_daemon.team.scope import set_scope
from memnest_daemon.team.state import TeamState, folder_state
from memnest_proto.contract import OFFLINE_MODEL

OTHER = "0123456789abcdef0123456789abcdef"  # a global id no memory here has


@pytest.fixture(scope="module")
def model() -> Embedder:
    return Embedder(OFFLINE_MODEL)


@pytest.fixture
def team(tmp_path: Path, model: Embedder):
    workspace = tmp_path / "project"
    workspace.mkdir()
    registry = StoreRegistry(model.name, model.dim, 64, 1, 1, model.embed,
                             open_team=open_team)
    store = registry.acquire(str(workspace), "")
    yield SimpleNamespace(registry=registry, store=store, workspace=str(workspace),
                          folder=workspace / ".memnest" / "shared",
                          settings=Settings.from_env(), embed=model.embed)
    registry.release(store)
    registry.close_all()


def remember(t, text: str, shared: bool = True) -> int:
    """A memory written here as memory_store would (and shared, as memory_share would)."""
    with t.store.writing():
        [outcome] = ingest(t.store, t.workspace, [Item(text)], t.embed([text]), t.settings)
        if shared:
            set_scope(t.store, t.workspace, [outcome.memory], True)
    return outcome.memory.id


def gid_of(t, memory_id: int) -> str:
    return t.store.catalog[memory_id].global_id


def put(t, gid: str, doc: dict | str | bytes) -> Path:
    """A teammate's file, as a pull leaves it."""
    t.folder.mkdir(parents=True, exist_ok=True)
    path = t.folder / f"{gid}.json"
    data = doc if isinstance(doc, bytes) else \
        (doc if isinstance(doc, str) else json.dumps(doc)).encode()
    path.write_bytes(data)
    return path


def teammates(content: str, **more) -> dict:
    return {"_memnest": 1, "content": content, "author": "bob", **more}


def everything(t) -> tuple:
    """What the store holds and what the folder holds, to compare before and after."""
    memories = sorted((m.id, m.content, m.scope, m.global_id, tuple(m.tags), m.importance)
                      for m in t.store.catalog.values())
    files = {p.name: p.read_bytes() for p in sorted(t.folder.iterdir())
             if not p.is_symlink()} if t.folder.exists() else {}
    return memories, sorted(t.store.graph.edges), files


def counting_commits(t, monkeypatch) -> list:
    """The commits the store makes from now on (each still made)."""
    made: list = []
    commit = t.store.commit

    def counted(changes):
        made.append(changes)
        return commit(changes)
    monkeypatch.setattr(t.store, "commit", counted)
    return made


# -- the state belongs to the open store ----------------------------------------------------

def test_the_registry_gives_each_open_store_a_team_state_and_drops_it_on_close(team):
    store = team.store
    assert isinstance(store.team, TeamState)
    hook = store.team.hook
    assert hook in store.after_commit
    remember(team, "Deploys go out on Thursdays.")
    assert folder_state(store, team.workspace).fingerprint is None  # nothing synced yet
    sync.sync(store, team.workspace, team.embed, team.settings)
    assert folder_state(store, team.workspace).files  # what it saw is kept
    team.registry.release(store)
    assert team.registry.close_idle(0) == [store.db_path]
    assert store.team is None and hook not in store.after_commit
    again = team.registry.acquire(team.workspace, "")
    team.store = again
    assert isinstance(again.team, TeamState) and again.team is not hook
    assert folder_state(again, team.workspace).files == {}  # read again, as after a restart


def test_a_store_opened_without_team_memory_follows_no_commit(tmp_path, model):
    registry = StoreRegistry(model.name, model.dim, 64, 1, 1, model.embed)
    try:
        store = registry.acquire(str(tmp_path), "")
        assert store.team is None and store.after_commit == []
        registry.release(store)
    finally:
        registry.close_all()


# -- one phase at a time -----------------------------------------------------------------------

def test_read_folder_reads_what_changed_and_names_what_cannot_be_read(team):
    good = put(team, OTHER, teammates("Staging resets at 01:00."))
    put(team, "c" * 32, '{"_memnest": 1, "content": "broken"')
    state = folder_state(team.store, team.workspace)
    report = sync.Report()
    pulled = sync.read_folder(team.workspace, state, team.settings.max_store_chars, False,
                              report)
    assert pulled.read == [OTHER, "c" * 32]
    assert pulled.files[OTHER].content == "Staging resets at 01:00."
    assert pulled.files[OTHER].author == "bob"
    assert "not valid JSON" in pulled.problems["c" * 32 + ".json"]
    sync.begin(state, pulled, report)
    sync.record(state, pulled, {}, report)
    assert state.files == {OTHER: (good.stat().st_size, good.stat().st_mtime_ns)}
    # the next read reads only the broken file again (it was never taken in), and a
    # problem of a file not read again is still reported
    again = sync.read_folder(team.workspace, state, team.settings.max_store_chars, False,
                             sync.Report())
    assert again.read == ["c" * 32] and "c" * 32 + ".json" in again.problems


def test_plan_changes_decides_each_file_from_the_catalog(team):
    edited = remember(team, "The cache holds 512 entries.")
    doomed = remember(team, "Logs are kept for 7 days.")
    withdrawn = remember(team, "The queue is drained hourly.")
    unshared = remember(team, "Retries back off exponentially.")
    old_gid = gid_of(team, unshared)
    with team.store.writing():
        set_scope(team.store, team.workspace, [team.store.catalog[unshared]], False)
    put(team, gid_of(team, edited), teammates("The cache holds 1024 entries."))
    put(team, gid_of(team, doomed), {"_memnest": 1, "deleted": True})
    os.unlink(team.folder / f"{gid_of(team, withdrawn)}.json")  # a checkout without it
    put(team, old_gid, teammates("Retries are linear."))
    put(team, OTHER, teammates("Builds are cached for 14 days."))
    state = folder_state(team.store, team.workspace)
    pulled = sync.read_folder(team.workspace, state, team.settings.max_store_chars, True,
                              sync.Report())
    plan = sync.plan_changes(team.store, team.workspace, pulled)
    assert [(m.id, s.content) for m, s in plan.edits] == \
        [(edited, "The cache holds 1024 entries.")]
    assert [m.id for m, _ in plan.deleted] == [doomed]
    assert [m.id for m in plan.withdrawn] == [withdrawn]
    assert [(s.global_id, why) for s, why in plan.ignored] == [(old_gid, "unshared")]
    assert [s.global_id for s in plan.new] == [OTHER]
    vectors = sync.embed_texts(plan, team.embed)
    assert set(vectors.new) == {"Builds are cached for 14 days."}
    assert set(vectors.edits) == {"The cache holds 1024 entries."}


def test_a_sync_commits_once_per_kind_of_change(team, monkeypatch):
    edited = remember(team, "The cache holds 512 entries.")
    doomed = remember(team, "Logs are kept for 7 days.")
    put(team, gid_of(team, edited), teammates("The cache holds 1024 entries.",
                                              relations=[{"to": OTHER, "type": "RELATED_TO"}]))
    put(team, gid_of(team, doomed), {"_memnest": 1, "deleted": True})
    put(team, OTHER, teammates("Builds are cached for 14 days."))
    made = counting_commits(team, monkeypatch)
    report = sync.sync(team.store, team.workspace, team.embed, team.settings)
    # edits and tombstones; the new memory (one author); the relation
    assert len(made) == 3
    assert made[0].updated and made[0].deleted == [doomed]
    assert made[1].inserted and not made[1].updated
    assert made[2].edges_added and not made[2].inserted
    assert [e["id"] for e in report.updated] == [edited]
    assert [e["global_id"] for e in report.came_in] == [OTHER]
    assert report.relations == 1 and report.files_read == 3
    # the folder now matches the store: a sync of it writes nothing
    made.clear()
    assert not sync.sync(team.store, team.workspace, team.embed, team.settings,
                         everything=True)
    assert made == []


def test_a_crash_between_phases_leaves_what_was_committed_and_the_next_call_finishes(
        team, monkeypatch):
    edited = remember(team, "The cache holds 512 entries.")
    put(team, gid_of(team, edited), teammates("The cache holds 1024 entries."))
    put(team, OTHER, teammates("Builds are cached for 14 days."))

    def crash(*args, **kwargs):
        raise RuntimeError("the process died here")
    monkeypatch.setattr(sync, "apply_new", crash)
    with pytest.raises(RuntimeError):
        sync.sync(team.store, team.workspace, team.embed, team.settings)
    state = folder_state(team.store, team.workspace)
    assert team.store.catalog[edited].content == "The cache holds 1024 entries."  # whole
    assert OTHER not in {m.global_id for m in team.store.catalog.values()}
    assert state.fingerprint is None  # the next call looks again
    monkeypatch.undo()
    made = counting_commits(team, monkeypatch)
    report = sync.check(team.store, team.workspace, team.embed, team.settings)
    assert report is not None and [e["global_id"] for e in report.came_in] == [OTHER]
    assert report.updated == [] and len(made) == 1  # the edit is not made twice
    assert sync.check(team.store, team.workspace, team.embed, team.settings) is None


# -- hostile files: a clear problem, nothing else changed -------------------------------------

def test_a_file_naming_an_unshared_memorys_global_id_changes_nothing(team):
    kept = remember(team, "Retries back off exponentially.")
    old_gid = gid_of(team, kept)
    with team.store.writing():
        set_scope(team.store, team.workspace, [team.store.catalog[kept]], False)
    before = everything(team)
    put(team, old_gid, teammates("Retries are linear.", importance=5))
    report = sync.sync(team.store, team.workspace, team.embed, team.settings)
    assert everything(team)[:2] == before[:2]
    [ignored] = report.ignored
    assert ignored["global_id"] == old_gid and "unshared here" in ignored["why"]
    assert sync.ignored(team.store, team.workspace) == [ignored]


def test_a_file_naming_another_workspaces_memory_leaves_that_memory_alone(team, tmp_path):
    """Two workspaces in one database file: a copy of B's shared file in A's folder comes
    in as A's own memory and never reaches B's."""
    (tmp_path / "b").mkdir()
    other = SimpleNamespace(**{**vars(team), "workspace": str(tmp_path / "b"),
                               "folder": tmp_path / "b" / ".memnest" / "shared"})
    theirs = remember(other, "B deploys with blue-green.")
    before = team.store.catalog[theirs]
    put(team, before.global_id, teammates("A rewrites B's memory."))
    sync.sync(team.store, team.workspace, team.embed, team.settings)
    assert team.store.catalog[theirs] == before
    assert json.loads((other.folder / f"{before.global_id}.json").read_text())["content"] \
        == "B deploys with blue-green."


def _symlinked(t, outside: Path) -> str:
    outside.write_text(json.dumps(teammates("planted through a link")))
    t.folder.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, t.folder / ("a" * 32 + ".json"))
    return "symbolic link"


HOSTILE = {
    "bad JSON": lambda t, _: put(t, "a" * 32, '{"_memnest": 1, "content": ') and
    "not valid JSON",
    "huge": lambda t, _: put(t, "a" * 32, b"{" + b" " * (MAX_FILE_BYTES + 1) + b"}")
    and "over the limit",
    "conflict markers": lambda t, _: put(t, "a" * 32, "<<<<<<< ours\n{}\n=======\n{}\n"
                                                        ">>>>>>> theirs\n") and
    "conflict markers",
    "symlinked": lambda t, outside: _symlinked(t, outside),
    "not an object": lambda t, _: put(t, "a" * 32, "[1, 2]") and "not a JSON object",
    "unknown fields": lambda t, _: put(t, "a" * 32, teammates("x", run="rm -rf /")) and
    "unknown fields",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_file_is_a_problem_and_changes_nothing_else(team, tmp_path, kind):
    remember(team, "Deploys go out on Thursdays.")
    remember(team, "Staging resets at 01:00.", shared=False)
    sync.sync(team.store, team.workspace, team.embed, team.settings)
    before = everything(team)
    outside = tmp_path / "outside.json"
    expected = HOSTILE[kind](team, outside)
    report = sync.sync(team.store, team.workspace, team.embed, team.settings)
    problems = "\n".join(report.problems)
    assert "a" * 32 in problems and expected in problems, problems
    assert not report and report.came_in == []
    after = everything(team)
    assert after[:2] == before[:2]
    assert {k: v for k, v in after[2].items() if k != "a" * 32 + ".json"} == before[2]
    assert sync.warnings(team.store, team.workspace) == report.problems
    if kind == "symlinked":
        assert json.loads(outside.read_text())["content"] == "planted through a link"
    # a local write does not write over the teammate's file either
    hostile = team.folder / ("a" * 32 + ".json")
    bytes_before = None if hostile.is_symlink() else hostile.read_bytes()
    remember(team, "Builds are cached for 14 days.")
    if bytes_before is not None:
        assert hostile.read_bytes() == bytes_before


def test_a_store_opened_outside_the_registry_gets_team_memory_by_attach(tmp_path, model):
    from memnest_daemon.store.store import MemoryStore
    store = MemoryStore(str(tmp_path / "memory.lbug"), model.name, model.dim, 64, 1)
    try:
        sync.attach(store)
        state = store.team
        assert isinstance(state, TeamState) and store.after_commit == [state.hook]
        sync.attach(store)  # once only
        assert store.team is state and len(store.after_commit) == 1
    finally:
        store.close()
