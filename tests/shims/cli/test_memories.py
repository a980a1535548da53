"""The note memnest-ctl search prints under a result whose cited code is not fresh."""
from memnest_shims.cli.commands.memories import code_note


def test_fresh_code_needs_no_note():
    assert code_note({}) == "" and code_note({"state": "fresh", "anchors": []}) == ""


def test_changed_code_names_the_anchors_that_changed():
    code = {"state": "changed", "anchors": [{"state": "changed", "cites": "a.py:f"},
                                            {"state": "fresh", "cites": "b.py:g"}]}
    assert code_note(code) == "code changed: a.py:f"


def test_an_unmerged_branch_is_said():
    code = {"state": "deleted", "anchors": [{"state": "deleted", "cites": "c.py"}],
            "branch": {"written_on": "feature/x"}}
    assert code_note(code) == "code deleted: c.py; from unmerged branch feature/x"
