"""memnestd as a release older than this checkout would run: reports VERSION in Status.
Usage: python old_memnestd.py VERSION [memnestd arguments]. Tests of upgrades start it."""
import sys

import memnest_proto.version

memnest_proto.version.VERSION = sys.argv.pop(1)

from memnest_daemon.server.main import main  # noqa: E402 (after the version is set)

sys.exit(main())
