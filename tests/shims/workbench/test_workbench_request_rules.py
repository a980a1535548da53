"""The workbench's keys, without a server."""
from memnest_shims.workbench.guard import Keys


def test_the_browsers_key_buys_a_cookie_once():
    """The key handed to a browser is on its command line, which other local users can read:
    it works once. The printed one (the person's terminal) keeps working for the launch."""
    keys = Keys()
    assert keys.admits_launch(keys.opener) and not keys.admits_launch(keys.opener)
    assert keys.admits_launch(keys.launch) and keys.admits_launch(keys.launch)
    assert not keys.admits_launch(keys.session) and not keys.admits_launch("")
