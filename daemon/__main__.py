import sys

from .server.main import main

sys.exit(main())
