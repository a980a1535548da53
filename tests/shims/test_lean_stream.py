"""lean_stream's SessionFrames, written and read by hand, without a daemon."""
from memnest_shims.lean_call import _bytes, _string, fields
from memnest_shims.lean_stream import read_frame, start_frame


def test_frames_from_the_daemon_are_read_by_kind():
    assert read_frame(_bytes(2, b'{"id": 1}')) == ("message", b'{"id": 1}')
    state = _bytes(3, _string(1, "/work/project") + _string(2, "/db"))
    assert read_frame(state) == ("state", ("/work/project", "/db"))
    assert read_frame(_bytes(4, _string(1, "draining"))) == ("closing", "draining")


def test_a_frame_of_a_newer_kind_is_none():
    assert read_frame(_bytes(9, b"future")) is None


def test_the_start_frame_carries_its_fields_by_number():
    frame = start_frame({"workspace": "/w", "client": "memnest-mcp", "use_roots": True})
    body = fields(frame)[1]
    assert isinstance(body, bytes)
    start = fields(body)
    assert start[1] == b"/w" and start[6] == b"memnest-mcp" and start[4] == 1


def test_an_empty_start_is_still_sent():
    assert fields(start_frame({})) == {1: b""}
