"""The ``guard`` command line: argument parsing and output only; the work is in ``guard.*``."""
