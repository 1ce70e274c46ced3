"""Exit codes shared by every command."""

OK = 0
FINDINGS = 1  # lint: findings; check/run: invalid input
INVALID_INPUT = 1
USAGE = 2
