"""The long-running components against a real API server: runners with backoff, leader election over a Lease,
and the health, readiness and metrics endpoints (`kai scheduler|binder|podgrouper|controllers|run`)."""
