"""Team memory through git (daemon/team/): two clones of one repository, each with its own
real daemon, the real git CLI in between."""
import json
import os
import shutil
from pathlib import Path

import pytest
from support import git

GID = "0123456789abcdef0123456789abcdef"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")





def test_shared_memories_travel_through_git_and_databases_stay_out(team):
    a, b = team
    deploy = a.call("memory_store", content="We deploy with blue-green on Fridays.",
                    tags=["deploy"], importance=4, scope="shared")
    assert deploy["scope"] == "shared"
    db = a.call("memory_store", content="The primary database is Postgres 16.", tags=["db"])
    private = a.call("memory_store", content="My own scratch note about lunch.")
    shared = a.call("memory_share", ids=[db["id"]])
    assert shared["status"] == "shared"
    a.call("memory_relate", from_id=deploy["id"], to_id=db["id"], relationship="RELATED_TO")

    # the databases are ignored by .memnest/.gitignore: only the shared files show up
    status = git(a.repo, "status", "--porcelain", "--untracked-files=all").stdout.split("\n")
    listed = sorted(line[3:] for line in status if line)
    files = sorted(p.name for p in a.shared().iterdir())
    assert listed == [f".memnest/shared/{f}" for f in files]
    assert (a.repo / ".memnest" / ".gitignore").is_file()
    assert len(files) == 2
    gid = a.call("memory_get", id=deploy["id"])["global_id"]
    doc = json.loads((a.shared() / f"{gid}.json").read_text())
    assert doc["content"] == "We deploy with blue-green on Fridays."
    assert doc["tags"] == ["deploy"] and doc["importance"] == 4
    db_gid = a.call("memory_get", id=db["id"])["global_id"]
    assert doc["relations"] == [{"to": db_gid, "type": "RELATED_TO"}]
    text = (a.shared() / f"{gid}.json").read_text()
    assert str(a.repo) not in text and '"id"' not in text  # no paths, no local ids
    exported = json.loads(Path(a.call("memory_export")["path"]).read_text())
    assert {(r.get("scope"), r.get("global_id")) for r in exported["memories"]} == \
        {("shared", gid), ("shared", db_gid), (None, None)}
    a.publish()

    b.pull()
    found = b.call("memory_search", query="how do we deploy")["results"]
    top = found[0]
    assert top["content"] == "We deploy with blue-green on Fridays."
    assert top["global_id"] == gid and top["scope"] == "shared"
    got = b.call("memory_get", id=top["id"])
    assert any(e["type"] == "RELATED_TO" for e in got["edges"])
    assert "lunch" not in json.dumps(b.call("memory_list")) and private["id"]
    out = b.ctl("sync")
    assert out.returncode == 0, out.stderr
    assert "came in: 2" in out.stdout and "blue-green" in out.stdout
    # B rewrites nothing: identical memories give identical bytes
    assert git(b.repo, "status", "--porcelain").stdout == ""

    # a delete leaves a tombstone that propagates
    a.call("memory_delete", id=deploy["id"])
    assert json.loads((a.shared() / f"{gid}.json").read_text()) == {"_memnest": 1,
                                                                     "deleted": True}
    a.publish("forget")
    b.pull()
    assert b.call("memory_search", query="how do we deploy")["results"][0]["global_id"] != gid
    report = b.call("memory_sync")
    assert [d["global_id"] for d in report["deleted"]] == [gid]

    # unsharing removes the file and says so
    out = a.ctl("share", "--unshare", str(db["id"]))
    assert out.returncode == 0, out.stderr
    assert f"removed .memnest/shared/{db_gid}.json" in out.stdout
    assert not (a.shared() / f"{db_gid}.json").exists()
    a.publish("unshare")
    b.pull()
    report = b.call("memory_sync")
    assert [u["global_id"] for u in report["unshared"]] == [db_gid]
    kept = b.call("memory_search", query="primary database Postgres")["results"][0]
    assert kept["content"] == "The primary database is Postgres 16." and "scope" not in kept


def test_edits_on_both_sides_conflict_until_resolved(team):
    a, b = team
    m = a.call("memory_store", content="The API timeout is 30 seconds.", scope="shared")
    gid = a.call("memory_get", id=m["id"])["global_id"]
    a.publish()
    b.pull()
    mine = b.call("memory_search", query="API timeout")["results"][0]
    assert mine["global_id"] == gid

    a.call("memory_update", id=m["id"], content="The API timeout is 45 seconds on staging.")
    a.publish("a edits")
    b.call("memory_update", id=mine["id"], content="The API timeout is 90 seconds in prod.")
    git(b.repo, "commit", "-qam", "b edits")
    merge = b.pull(check=False)
    assert merge.returncode != 0
    assert "<<<<<<<" in (b.shared() / f"{gid}.json").read_text()

    # not imported: the memory keeps its last good version, and the problem is reported
    got = b.call("memory_get", id=mine["id"])
    assert got["content"] == "The API timeout is 90 seconds in prod."
    report = b.call("memory_sync")
    assert any(gid in p and "conflict markers" in p for p in report["problems"])
    assert "git add" in report["how_to_fix"]
    stats = b.call("memory_stats")
    assert any(gid in w for w in stats["warnings"])
    out = b.ctl("sync")
    assert out.returncode == 1 and "conflict markers" in out.stdout
    doctor = b.ctl("doctor")
    assert "FAIL  shared memories in" in doctor.stdout and gid in doctor.stdout
    assert "<<<<<<<" in (b.shared() / f"{gid}.json").read_text()  # never written over

    git(b.repo, "checkout", "--theirs", "--", f".memnest/shared/{gid}.json")
    git(b.repo, "add", ".memnest/shared")
    git(b.repo, "commit", "-qm", "take a's version")
    got = b.call("memory_get", id=mine["id"])
    assert got["content"] == "The API timeout is 45 seconds on staging."
    assert b.call("memory_sync")["problems"] == []
    assert b.call("memory_stats")["warnings"] == []


def test_pulled_memories_are_deduplicated_and_flagged_like_local_ones(team):
    a, b = team
    lint = b.call("memory_store", content="Run the linters with make lint before pushing.",
                  scope="shared")
    lint_gid = b.call("memory_get", id=lint["id"])["global_id"]
    b.call("memory_store", content="The nightly backup window is 02:00 UTC")
    a.call("memory_store", content="Run the linters with make lint before pushing.",
           scope="shared")
    a.call("memory_store", content="The nightly backup window is 03:00 UTC", scope="shared")
    a.publish()
    b.pull()
    report = b.call("memory_sync")
    assert len(report["merged"]) == 1 and report["merged"][0]["status"] == "duplicate"
    assert report["merged"][0]["into"] == lint_gid  # B shared its twin first
    assert len(report["came_in"]) == 1
    flagged = report["conflicts"]
    assert flagged and flagged[0]["conflicts"][0]["type"] == "value_disagreement"
    assert b.call("memory_stats")["memories"] == 3
    # the local twin took the shared name: no second copy
    twins = b.call("memory_search", query="linters make lint")["results"]
    assert twins[0]["scope"] == "shared"
    importance = b.call("memory_get", id=lint["id"])["importance"]
    # a restart reads every file again: the merged-away one is not brought in twice
    b.client.close()
    b.daemon.stop()
    b.daemon.start()
    b.client = b.daemon.client()
    again = b.call("memory_sync")
    assert again["came_in"] == [] and again["merged"] == [], again
    assert b.call("memory_stats")["memories"] == 3
    assert b.call("memory_get", id=lint["id"])["importance"] == importance


def test_a_secret_is_never_shared(team, tmp_path):
    a, _ = team
    m = a.call("memory_store", content="The deploy key lives in the vault.", tags=["deploy"])
    a.stop()
    # a memory written before today's redaction rules: the secret is in the database
    from memnest_daemon.store.changes import Changes
    from memnest_daemon.store.store import MemoryStore
    store = MemoryStore(str(a.repo / ".memnest" / "memory.lbug"),
                        "memnest/all-MiniLM-L6-v2-int8", 384, 64, 1)
    with store.writing():
        old = store.catalog[m["id"]]
        store.commit(Changes(updated=[(old.copy(
            content="The deploy key is AKIAIOSFODNN7EXAMPLE, in the vault."), None)]))
    store.close()
    a.daemon.start()
    a.client = a.daemon.client()
    message = a.fails("memory_share", id=m["id"])
    assert "aws-access-key" in message and "not shared" in message
    assert not a.shared().exists() or not any(a.shared().iterdir())
    out = a.ctl("share", str(m["id"]))
    assert out.returncode == 1 and "aws-access-key" in out.stderr


def test_hostile_shared_files_are_skipped_and_reported(team, tmp_path):
    _, b = team
    b.call("memory_store", content="A first memory makes the folder.", scope="shared")
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"_memnest": 1, "content": "planted through a link"}))
    bad = b.shared()
    os.symlink(outside, bad / ("a" * 32 + ".json"))
    (bad / ("b" * 32 + ".json")).write_bytes(b"{" + b" " * (10 * 1024 * 1024) + b"}")
    (bad / "not-an-id.json").write_text(json.dumps({"_memnest": 1, "content": "misnamed"}))
    (bad / ("c" * 32 + ".json")).write_text('{"_memnest": 1, "content": "broken"')
    (bad / ("d" * 32 + ".json")).write_text(json.dumps(
        {"_memnest": 1, "content": "x", "importance": 9}))
    report = b.call("memory_sync")
    problems = "\n".join(report["problems"])
    assert "symbolic link" in problems and "a" * 32 in problems
    assert "over the limit" in problems and "b" * 32 in problems
    assert "not-an-id.json" in problems
    assert "not valid JSON" in problems and "c" * 32 in problems
    assert "importance" in problems and "d" * 32 in problems
    assert report["came_in"] == []
    listed = json.dumps(b.call("memory_list"))
    assert "planted" not in listed and "misnamed" not in listed and "broken" not in listed
    assert os.path.islink(bad / ("a" * 32 + ".json"))  # left as it is, never followed
    assert json.loads(outside.read_text())["content"] == "planted through a link"
    # a shared folder that is itself a link is not read
    shutil.rmtree(bad)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / f"{GID}.json").write_text(json.dumps({"_memnest": 1, "content": "away"}))
    os.symlink(elsewhere, bad)
    report = b.call("memory_sync")
    assert any("symbolic link" in p for p in report["problems"])
    assert "away" not in json.dumps(b.call("memory_list"))
    assert b.call("memory_stats")["memories"] >= 1  # still serving


def test_memory_update_shares_and_unshares(team):
    a, _ = team
    m = a.call("memory_store", content="Builds are cached in the artifact store.")
    out = a.call("memory_update", id=m["id"], scope="shared",
                 content="Builds are cached in the artifact store for 14 days.")
    gid = out["memory"]["global_id"]
    assert out["memory"]["scope"] == "shared"
    doc = json.loads((a.shared() / f"{gid}.json").read_text())
    assert doc["content"] == "Builds are cached in the artifact store for 14 days."
    a.call("memory_update", id=m["id"], importance=5)  # a local write rewrites the file
    assert json.loads((a.shared() / f"{gid}.json").read_text())["importance"] == 5
    out = a.call("memory_update", id=m["id"], scope="private")
    assert out["removed_files"] == [f".memnest/shared/{gid}.json"]
    assert not (a.shared() / f"{gid}.json").exists()
    assert "global_id" not in a.call("memory_get", id=m["id"])
    again = a.call("memory_share", id=m["id"])  # unsharing retired the old global id
    fresh = again["memories"][0]["global_id"]
    assert fresh != gid and (a.shared() / f"{fresh}.json").exists()
    assert not (a.shared() / f"{gid}.json").exists()


def test_a_shared_memory_keeps_its_anchors_in_a_teammates_checkout(team):
    a, b = team
    (a.repo / "src").mkdir()
    (a.repo / "src" / "retry.py").write_text("def send():\n    return 3\n")
    git(a.repo, "add", "src")
    git(a.repo, "commit", "-qm", "code")
    stored = a.call("memory_store", content="Retries are counted in `send()` in src/retry.py",
                    scope="shared")
    doc = json.loads(next(a.shared().glob("*.json")).read_text())
    [anchor] = doc["anchors"]
    assert anchor["path"] == "src/retry.py" and anchor["symbol"] == "send"
    assert "mtime_ns" not in anchor and "size" not in anchor  # local to one checkout
    a.publish()
    b.pull()
    found = b.call("memory_search", query="retries counted send")["results"][0]
    assert found["content"] == a.call("memory_get", id=stored["id"])["content"]
    assert found["code"]["state"] == "fresh"
    assert [x["cites"] for x in found["code"]["anchors"]] == ["send() in src/retry.py"]
    # B's checkout changes the code: B's recall says so, and B's file did not change.
    before = sorted(p.read_bytes() for p in b.shared().glob("*.json"))
    (b.repo / "src" / "retry.py").write_text("def send():\n    return 5\n")
    assert b.call("memory_get", id=found["id"])["code"]["state"] == "changed"
    assert sorted(p.read_bytes() for p in b.shared().glob("*.json")) == before


def test_a_raw_query_write_reaches_the_shared_file_and_survives_a_restart(team):
    a, _ = team
    a.stop()
    a.daemon.env["MEMORY_ALLOW_DESTRUCTIVE"] = "true"
    a.daemon.start()
    a.client = a.daemon.client()
    kept = a.call("memory_store", content="The release branch is cut on Mondays",
                  scope="shared")["id"]
    doomed = a.call("memory_store", content="Staging is reset every night at 01:00",
                    scope="shared")["id"]
    files = {p.name: p for p in a.shared().glob("*.json")}
    assert len(files) == 2
    a.call("memory_query", cypher_query=f"MATCH (m:Memory) WHERE m.id = {kept} "
                                        "SET m.content = 'The release branch is cut on Tuesdays'")
    a.call("memory_query", cypher_query=f"MATCH (m:Memory) WHERE m.id = {doomed} DETACH DELETE m")
    docs = {name: json.loads(p.read_text()) for name, p in files.items()}
    assert sorted(d.get("content", "<tombstone>") for d in docs.values()) == \
        ["<tombstone>", "The release branch is cut on Tuesdays"]
    # After a restart (which reads every shared file again) the edit is still there.
    a.stop()
    a.daemon.start()
    a.client = a.daemon.client()
    assert a.call("memory_get", id=kept)["content"] == "The release branch is cut on Tuesdays"
    assert a.call("memory_list")["total"] == 1
