"""memnestd as another release would run: reports VERSION in Status. With
MEMNEST_TEST_NO_SESSIONS=1 it also lacks the Session stream, as releases before 0.2.0 did.
Usage: python old_memnestd.py VERSION [memnestd arguments]. Tests of upgrades start it."""
import os
import sys

import memnest_proto.version

memnest_proto.version.VERSION = sys.argv.pop(1)
if os.environ.get("MEMNEST_TEST_NO_SESSIONS") == "1":
    from memnest_daemon.server.servicer import MemnestService
    from memnest_proto.memnest_pb2_grpc import MemnestServicer

    MemnestService.Session = MemnestServicer.Session  # gRPC answers UNIMPLEMENTED
    MemnestService.serve_session = None  # and the socket only speaks gRPC

from memnest_daemon.server.main import main  # noqa: E402 (after the version is set)

sys.exit(main())
