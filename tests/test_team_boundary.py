"""Scope is a boundary no shared file crosses (daemon/team/sync.py): a teammate's commit, or
an old branch, may change only a memory that is shared now, through its own global id, and
what it brings in passes the admission every other write passes. Two clones of one
repository, each with its own real daemon, the real git CLI in between."""
import json
import secrets
import string

from support import git

MINE = "The staging database password rotation runs every Monday at 09:00 from the vault job"
MY_TAGS = ["project-nightjar", "ops"]


def _token(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _write_shared(side, gid: str, doc: dict) -> None:
    side.shared().mkdir(parents=True, exist_ok=True)
    (side.shared() / f"{gid}.json").write_text(json.dumps({"_memnest": 1, **doc}))


def _private_as_stored(side, memory_id: int) -> dict:
    m = side.call("memory_get", id=memory_id)
    return {k: m.get(k) for k in ("content", "tags", "category", "importance", "scope",
                                  "global_id")}


def _shared_files_text(side) -> str:
    folder = side.shared()
    return "\n".join(p.read_text() for p in sorted(folder.glob("*.json"))) \
        if folder.is_dir() else ""


def test_a_teammates_copy_of_a_private_memory_publishes_nothing(team):
    a, b = team
    near = a.call("memory_store", content=MINE, tags=MY_TAGS, category="learning")
    copied = a.call("memory_store", content="Dana keeps the on-call spreadsheet in her drive",
                    tags=["project-nightjar"], category="learning")
    before = {i: _private_as_stored(a, i) for i in (near["id"], copied["id"])}
    assert all(m["scope"] is None for m in before.values())  # private
    # a teammate guesses how one note starts, and copies another word for word
    b.call("memory_store", content="The staging database password rotation runs every "
           "Monday at 09:00", category="learning", tags=["ops"], scope="shared")
    b.call("memory_store", content="Dana keeps the on-call spreadsheet in her drive",
           category="learning", scope="shared")
    b.publish("teammate")
    a.pull()
    report = a.call("memory_sync")
    assert len(report["came_in"]) == 2, report
    assert not report["merged"] and not report["updated"], report
    assert {i: _private_as_stored(a, i) for i in before} == before
    # nothing of the private memories reached a file git would commit
    text = _shared_files_text(a)
    assert "project-nightjar" not in text and "from the vault job" not in text
    # the shared copies are memories of their own, beside the private ones
    listed = a.call("memory_list", limit=50)["memories"]
    assert sum(m["content"] == "Dana keeps the on-call spreadsheet in her drive"
               for m in listed) == 2
    # a later private write near a shared memory does not flow into its file
    files = {p.name: p.read_bytes() for p in a.shared().glob("*.json")}
    out = a.call("memory_store", content="The staging database password rotation runs "
                 "every Monday at 09:00, ask Dana before skipping it", category="learning",
                 tags=["ops"])
    assert out["status"] == "stored", out
    assert {p.name: p.read_bytes() for p in a.shared().glob("*.json")} == files
    # nor does a dream merge a private memory with a shared one
    a.call("memory_dream", force=True)
    assert {i: _private_as_stored(a, i) for i in before} == before
    assert {p.name: p.read_bytes() for p in a.shared().glob("*.json")} == files


def test_an_unshared_memory_is_out_of_reach_of_files_naming_its_old_id(team):
    a, b = team
    m = a.call("memory_store", content="The canary fleet takes five percent of traffic",
               tags=["deploy"], scope="shared")
    gid = a.call("memory_get", id=m["id"])["global_id"]
    a.publish("share")
    git(a.repo, "branch", "with-the-file")
    b.pull()
    a.call("memory_share", id=m["id"], unshare=True)
    a.call("memory_update", id=m["id"], content="The canary fleet takes five percent of "
           "traffic; the internal override code is kept in my notes", tags=["deploy", "me"])
    before = _private_as_stored(a, m["id"])
    a.publish("unshare")

    # a teammate rewrites the file under the old id, then deletes it with a tombstone
    b.pull()
    _write_shared(b, gid, {"content": "The canary fleet takes all of the traffic",
                           "tags": ["deploy"], "importance": 5})
    b.publish("rewrite")
    a.pull()
    report = a.call("memory_sync")
    assert [e["global_id"] for e in report["ignored"]] == [gid], report
    assert not report["updated"] and not report["came_in"], report
    assert _private_as_stored(a, m["id"]) == before
    _write_shared(b, gid, {"deleted": True})
    b.publish("tombstone")
    a.pull()
    report = a.call("memory_sync")
    assert not report["deleted"], report
    assert _private_as_stored(a, m["id"]) == before

    # an old branch that still holds the file, with nobody attacking
    git(a.repo, "checkout", "-q", "with-the-file")
    report = a.call("memory_sync")
    assert not report["updated"] and not report["came_in"], report
    assert [e["global_id"] for e in report["ignored"]] == [gid], report
    git(a.repo, "checkout", "-q", "main")
    a.call("memory_sync")
    assert _private_as_stored(a, m["id"]) == before
    assert "override code" not in _shared_files_text(a)

    # after a restart (every file read again) the database still holds it so
    a.daemon.stop()
    a.daemon.start()
    a.client = a.daemon.client()
    git(a.repo, "checkout", "-q", "with-the-file")
    a.call("memory_sync", all=True)
    assert _private_as_stored(a, m["id"]) == before
    git(a.repo, "checkout", "-q", "main")


def test_a_checkout_without_the_file_withdraws_and_the_file_brings_it_back(team):
    a, _ = team
    git(a.repo, "branch", "before")
    kept = a.call("memory_store", content="Release notes are drafted in the wiki first",
                  scope="shared")
    touched = a.call("memory_store", content="Hotfixes go through the fast lane pipeline",
                     scope="shared")
    gids = {i: a.call("memory_get", id=i)["global_id"] for i in (kept["id"], touched["id"])}
    a.publish("share")
    git(a.repo, "checkout", "-q", "before")
    report = a.call("memory_sync")
    assert sorted(u["id"] for u in report["unshared"]) == sorted(gids)
    assert "scope" not in a.call("memory_get", id=kept["id"])
    # the owner changes one of them while its file is away: it stays the owner's
    a.call("memory_update", id=touched["id"], content="Hotfixes go through the fast lane "
           "pipeline, and I page myself first")
    git(a.repo, "checkout", "-q", "main")
    report = a.call("memory_sync")
    assert [(u["id"], u.get("shared_again")) for u in report["updated"]] == \
        [(kept["id"], True)], report
    assert a.call("memory_get", id=kept["id"])["global_id"] == gids[kept["id"]]
    assert [e["global_id"] for e in report["ignored"]] == [gids[touched["id"]]]
    again = a.call("memory_get", id=touched["id"])
    assert "scope" not in again and "page myself" in again["content"]
    assert "page myself" not in _shared_files_text(a)


def test_shared_files_pass_the_same_admission_as_every_other_write(team, tmp_path):
    a, b = team
    aws = "AKIA" + _token(string.ascii_uppercase + string.digits, 16)
    github = "ghp_" + _token(string.ascii_letters + string.digits, 36)
    text = (f"Deploys read the key {aws} and push with token {github}. "
            "<private>The break-glass account is mine alone.</private> Ask ops first.")
    gid = "1f" * 16
    b.call("memory_store", content="A first memory makes the folder.", scope="shared")
    _write_shared(b, gid, {"content": text, "tags": ["deploy", f"token {github}"]})
    b.publish("teammate")
    a.pull()
    report = a.call("memory_sync")
    assert gid in [e["global_id"] for e in report["came_in"]], report
    stored = next(m for m in a.call("memory_list", limit=50)["memories"]
                  if m.get("global_id") == gid)
    for leaked in (aws, github, "break-glass"):
        assert leaked not in json.dumps(stored)
    assert stored["tags"] == ["deploy"]
    assert any(p["global_id"] == gid for p in report["privacy"]), report
    # memory_import of the same text stores the same text
    export = tmp_path / "export.json"
    export.write_text(json.dumps({"format": "memnest-export", "version": 1, "memories": [
        {"key": "k", "content": text, "tags": ["deploy"]}]}))
    c_root = a.repo / "elsewhere"
    c_root.mkdir()
    imported = a.client.call_tool("memory_import", {"path": str(export)}, str(c_root))
    assert imported["memories"]["stored"] == 1
    listed = a.client.call_tool("memory_list", {}, str(c_root))["memories"]
    assert [m["content"] for m in listed] == [stored["content"]]
    # the file follows the store: the secret is gone from the working tree as well
    on_disk = (a.shared() / f"{gid}.json").read_text()
    assert aws not in on_disk and github not in on_disk and "break-glass" not in on_disk
    # a file that is private through and through is not imported, and says why
    _write_shared(b, "2e" * 16, {"content": "<private>all of it</private>"})
    b.publish("all private")
    a.pull()
    report = a.call("memory_sync")
    assert any("2e" * 16 in p and "private" in p for p in report["problems"]), report


def test_no_export_or_page_is_written_where_git_publishes(call, workspace):
    """Issue 55 (3): memory_export and memory_graph_html took paths under .memnest/shared/:
    an injected agent or a remote client could write every private memory where `git add
    .memnest` publishes it. Refused, in any spelling; nothing is written there."""
    from memnest_shims.client import ToolFailure
    call("memory_store", content=MINE, tags=MY_TAGS)
    shared = workspace / ".memnest" / "shared"
    for tool, path in (("memory_export", ".memnest/shared/all.json"),
                       ("memory_export", str(shared / "x" / "all.json")),
                       ("memory_export", "./.memnest//shared/all.json"),
                       ("memory_export", ".memnest/SHARED/all.json"),
                       ("memory_graph_html", ".memnest/shared/graph.html")):
        try:
            call(tool, path=path)
        except ToolFailure as refused:
            assert refused.code in ("permission_denied", "invalid_argument"), refused.message
        else:
            raise AssertionError(f"{tool} wrote to {path}")
    assert not shared.exists() or MINE not in "".join(
        p.read_text(errors="replace") for p in shared.rglob("*") if p.is_file())


def test_a_teammates_ignore_file_cannot_publish_the_database(team):
    """Issue 55 (2): a committed .memnest/.gitignore that ignores nothing made the
    documented `git add .memnest` stage memory.lbug. git itself is asked: memnest's rules go
    back at the end of the ignore file (the call says so, to commit it), and `git add
    .memnest` stages no private file. A private file git tracks gets a loud warning on
    every call and sharing is refused until it is untracked."""
    a, b = team
    a.call("memory_store", content="Shared note: the API gateway is Kong", scope="shared")
    a.publish()
    b.pull()
    ignore = b.repo / ".memnest" / ".gitignore"
    ignore.write_text("!*\n")
    git(b.repo, "add", "-f", ".memnest/.gitignore")
    git(b.repo, "commit", "-qm", "ignore nothing")
    git(b.repo, "push", "-q", "origin", "HEAD")
    a.pull()
    stored = a.call("memory_store", content=MINE, tags=MY_TAGS)
    assert "Commit that change" in stored["git_note"] and "git_warning" not in stored
    staged = git(a.repo, "add", "-n", ".memnest").stdout
    assert "memory.lbug" not in staged and ".gitignore" in staged, staged
    assert "git_note" not in a.call("memory_stats")

    (a.repo / ".memnest" / "exports").mkdir()
    (a.repo / ".memnest" / "exports" / "all.json").write_text("{}")
    git(a.repo, "add", "-f", ".memnest/exports/all.json")
    warned = a.call("memory_list")
    assert ".memnest/exports/all.json" in warned["git_warning"]
    assert any("git would publish" in w for w in a.call("memory_stats")["warnings"])
    refused = a.fails("memory_share", id=stored["id"])
    assert "not shared" in refused and "git rm --cached" in refused
    assert "not shared" in a.fails("memory_store", content="Another team fact",
                                   scope="shared")
    assert "not shared" in a.fails("memory_update", id=stored["id"], scope="shared")
    git(a.repo, "rm", "-q", "--cached", ".memnest/exports/all.json")
    (a.repo / ".memnest" / ".gitignore").touch()  # a change it sees at once
    fixed = a.call("memory_share", id=stored["id"])
    assert fixed["status"] == "shared" and "git_warning" not in fixed
