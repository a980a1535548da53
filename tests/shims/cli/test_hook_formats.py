"""hook_formats: each editor's answer shape and payload reading, without a daemon."""
import json

import pytest

from memnest_shims.cli import hook_formats as formats


@pytest.mark.parametrize("editor,expected", [
    ("claude-code", {"decision": "block", "reason": "store it"}),
    ("codex", {"decision": "block", "reason": "store it"}),
    ("gemini", {"decision": "deny", "reason": "store it"}),
    ("cursor", {"followup_message": "store it"}),
    ("vscode", {"hookSpecificOutput": {"hookEventName": "Stop", "decision": "block",
                                       "reason": "store it"}}),
])
def test_a_stop_answer_is_each_editors_shape(editor, expected):
    assert json.loads(formats.answer(editor, "stop", "store it")) == expected


def test_an_editor_that_cannot_take_it_gets_nothing():
    assert formats.answer("kiro-cli", "stop", "store it") == ""
    assert formats.answer("vscode", "prompt", "recalled") == ""


def test_context_is_each_editors_shape():
    assert json.loads(formats.answer("gemini", "prompt", "x")) == {
        "hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "x"}}
    assert json.loads(formats.answer("cursor", "session-start", "x")) == {
        "additional_context": "x"}
    assert formats.answer("kiro", "prompt", "x") == "x"


def test_a_payload_of_wrong_types_reads_as_empty():
    payload = formats.Payload("claude-code", {"prompt": 3, "session_id": None,
                                              "stop_hook_active": "yes"})
    assert payload.prompt == payload.session == "" and not payload.continuing
    assert payload.event("prompt") == "prompt"
