"""Exit codes shared by every command: one contract, the one the README states.

- 0: success: a clean lint, any decision from check/run, a report from monitor/audit.
- 1: findings (lint at or above ``--fail-on``; monitor ``--fail-on-alert``) or invalid input: a file that is
  missing, unreadable or malformed (payload, template, policy, config, log), a database that cannot be used.
- 2: usage errors: an unknown command or option, a missing argument, an option value that cannot be used
  (``--format xml``, ``--window 1hour``, ``--now yesterday``, an unknown ``--domain``).
"""

OK = 0
FINDINGS = 1
INVALID_INPUT = 1
USAGE = 2
