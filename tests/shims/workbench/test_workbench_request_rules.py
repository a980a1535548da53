"""The workbench's keys, without a server."""
from memnest_shims.workbench.guard import Keys


def test_the_browsers_key_buys_a_cookie_once():
    """The key handed to the browser memnest-ctl ui opens (through a private file, which is
    removed when `spent` is called) works once. The printed one (the person's terminal) keeps
    working for the launch."""
    spent = []
    keys = Keys(spent=lambda: spent.append(1))
    assert keys.admits_launch(keys.opener) and not keys.admits_launch(keys.opener)
    assert spent == [1]
    assert keys.admits_launch(keys.launch) and keys.admits_launch(keys.launch)
    assert not keys.admits_launch(keys.session) and not keys.admits_launch("")
    assert spent == [1]
