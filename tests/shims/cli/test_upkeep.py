"""How memnest-ctl dream / verify put a report in one line (commands/upkeep.py)."""
from memnest_shims.cli.commands import upkeep


def _verify(healthy: bool, **more) -> dict:
    return {"healthy": healthy, "checked": {"memories": 12, "edges": 3}, "duration_ms": 41.7,
            "findings": {"count": 0 if healthy else 2, "items": [], "by_kind": {}}, **more}


def test_a_healthy_workspace():
    assert upkeep.verify_summary("/w", _verify(True)) == \
        "/w: healthy (12 memories, 3 links; 42 ms)"


def test_a_repaired_workspace_says_how_many():
    report = _verify(True, repaired={"count": 2, "items": []})
    assert upkeep.verify_summary("/w", report).endswith("; 2 findings repaired)")


def test_findings_are_counted():
    assert upkeep.verify_summary("/w", _verify(False)) == "/w: 2 findings (12 memories, 3 links)"


def test_a_skipped_dream_says_why(capsys):
    upkeep.print_dream({"status": "skipped", "workspace": "/w",
                        "gates": {"reasons": ["too soon", "too few"]}})
    assert capsys.readouterr().out == "/w: skipped (too soon; too few); --force runs it anyway\n"
