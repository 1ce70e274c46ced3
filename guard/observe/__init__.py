"""What guard saw: the event log and its schema, Prometheus metrics, the monitor and its reports."""
