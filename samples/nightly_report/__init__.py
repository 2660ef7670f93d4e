"""A nightly report started by a cron schedule in a named time zone (samples/nightly-report)."""
