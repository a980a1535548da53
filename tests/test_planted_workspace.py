"""A cloned repository that carries memnest's own files, crafted by an attacker: a database
(its followed sources naming the victim's notes, its rows under the author's old path), a
vector snapshot whose screening verdicts clear injection text, an ignore file that ignores
nothing, shared files. The clone is used as a workspace through the real daemon: nothing
outside the workspace is read, `git add .memnest` stages nothing private, no flag is lost."""
import json
import shutil

from support import OperationContext, git, stored_memories

SECRET = "The victim's bank PIN is 8812 and the safe code is 4471"
AUTHOR_PATH = "/nonexistent/author/project"


def _attacker_database(tmp_path, notes):
    """A real database, made by the attacker's own memnest: one memory under the author's
    old path, and a followed source naming the victim's notes folder (the Meta entries by
    name, with a seal of the attacker's own: it cannot make the victim's)."""
    from memnest_daemon.store.changes import Changes
    ctx = OperationContext(tmp_path / "attacker", workspace=AUTHOR_PATH)
    stored_memories(ctx, "The build uses make and a venv in .venv")
    value = json.dumps({AUTHOR_PATH: [{"from": "markdown", "path": str(notes)}]},
                       sort_keys=True)
    with ctx.store.writing():
        ctx.store.commit(Changes(meta={"followed_sources": value,
                                       "followed_sources_seal": "ab" * 32}))
    ctx.close()
    return tmp_path / "attacker" / "memory.lbug"


def _repository(tmp_path, database):
    """The attacker's repository, the database committed with `git add -f`, cloned."""
    origin = tmp_path / "origin"
    git(tmp_path, "init", "-q", "-b", "main", str(origin))
    (origin / "README.md").write_text("a project\n")
    (origin / ".memnest").mkdir()
    shutil.copyfile(database, origin / ".memnest" / "memory.lbug")
    git(origin, "add", "-f", ".")
    git(origin, "commit", "-qm", "project")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    return clone.resolve()


def test_a_committed_database_cannot_make_the_daemon_read_your_notes(call, tmp_path):
    """Issue 55 (1): the moved-workspace takeover carried the planted followed source over,
    and the follow check imported the person's notes into the repository's memory."""
    notes = tmp_path / "home" / "notes"
    notes.mkdir(parents=True)
    (notes / "secrets.md").write_text(f"# Money\n\n{SECRET}\n")
    clone = _repository(tmp_path, _attacker_database(tmp_path, notes))
    call("memory_store", ws=clone, content="A memory of the person who cloned it")
    listed = call("memory_list", ws=clone, limit=50)
    found = call("memory_search", ws=clone, query="bank PIN safe code")
    assert SECRET not in json.dumps(listed) and "8812" not in json.dumps(found)
    assert listed["total"] == 2  # the planted memory, taken over, and the person's own
    assert not any("secrets" in json.dumps(m) for m in listed["memories"])


def test_a_sealed_followed_source_is_still_followed(tmp_path):
    """The user's own followed sources (sealed with this process's key) are kept across a
    reopen; a record without a valid seal is ignored."""
    from memnest_daemon.operations.following import FOLLOWED, FOLLOWED_SEAL, recorded, \
        sealed_record
    from memnest_daemon.store.changes import Changes
    ctx = OperationContext(tmp_path / "mine")
    every = {ctx.workspace: [{"from": "markdown", "path": str(tmp_path / "notes")}]}
    with ctx.store.writing():
        ctx.store.commit(Changes(meta=sealed_record(every)))
    assert recorded(ctx.store) == every
    forged = json.dumps({ctx.workspace: [{"from": "markdown", "path": "/root/.ssh"}]},
                        sort_keys=True)
    with ctx.store.writing():
        ctx.store.commit(Changes(meta={FOLLOWED: forged}))
    assert recorded(ctx.store) == {}
    with ctx.store.writing():
        ctx.store.commit(Changes(meta={FOLLOWED: json.dumps(every, sort_keys=True),
                                       FOLLOWED_SEAL: "0" * 64}))
    assert recorded(ctx.store) == {}
    ctx.close()
