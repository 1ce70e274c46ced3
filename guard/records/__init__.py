"""The system of record: the policy (what may be read), claim types, the store, and the checker."""
