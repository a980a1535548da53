"""storage/user_key.py: the sealing key is made once, private, never through a link, and a
key file that is not a private file of the user's is refused rather than used."""
import os

import pytest
from memnest_daemon.storage.user_key import KEY_FILE, KeyRefused, load_or_create


def test_the_key_is_made_once_and_read_back(tmp_path):
    key = load_or_create(str(tmp_path))
    assert len(key) == 32 and load_or_create(str(tmp_path)) == key
    assert os.stat(tmp_path / KEY_FILE).st_mode & 0o777 == 0o600


@pytest.mark.parametrize("plant", ["link", "open", "short", "folder"])
def test_a_planted_or_open_key_file_is_refused(tmp_path, plant):
    path = tmp_path / KEY_FILE
    decoy = tmp_path / "decoy"
    decoy.write_bytes(b"k" * 32)
    if plant == "link":
        path.symlink_to(decoy)
    elif plant == "open":
        path.write_bytes(b"k" * 32)
        os.chmod(path, 0o644)
    elif plant == "short":
        path.write_bytes(b"k" * 8)
        os.chmod(path, 0o600)
    else:
        path.mkdir()
    with pytest.raises(KeyRefused, match="remove it"):
        load_or_create(str(tmp_path))
    assert decoy.read_bytes() == b"k" * 32
