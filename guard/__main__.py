"""``python -m guard``: the same command line as the ``guard`` script."""

import sys

from guard.cli.main import main

if __name__ == "__main__":  # importing the module (pkgutil, docs tools) must not run the command line
    sys.exit(main())
