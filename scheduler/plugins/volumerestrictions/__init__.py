"""spread-scheduler."""
