"""server/servicer.py's storage_failure: which failures tell the caller that nothing was
written because of the disk, and why."""
import errno

from memnest_daemon.core.storage_errors import DiskFailure
from memnest_daemon.server.servicer import storage_failure


def test_a_disk_failure_says_nothing_was_written_and_why():
    said = storage_failure(DiskFailure("Read-only file system", "IO exception: ..."))
    assert said is not None and said.startswith(
        "nothing was written: the file system is read-only (Read-only file system); ")


def test_an_os_error_of_a_full_disk_says_so():
    said = storage_failure(OSError(errno.ENOSPC, "No space left on device"))
    assert said is not None and "the disk is full" in said


def test_other_errors_are_not_the_disks():
    assert storage_failure(OSError(errno.ENOENT, "No such file or directory")) is None
    assert storage_failure(ValueError("No space left on device")) is None
    # An engine's own words are read by the storage layer, which raises DiskFailure.
    assert storage_failure(RuntimeError(
        "IO exception: Cannot write to file. Error: No space left on device")) is None
