"""``python -m guard``: the same command line as the ``guard`` script."""

import sys

from guard.cli.main import main

sys.exit(main())
