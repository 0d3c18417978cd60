"""Usage history for time-based fair share (§5.5): where each queue's past allocation comes from.

Store level (it does I/O, it knows nothing of scheduling): `params` holds the usageDBConfig values,
`interface` the `UsageSource` protocol every source matches, `prometheus` the HTTP query client of a real
cluster, `recorder` the embedded history that `kai schedule` and the simulator feed from the scheduler's own
cycles, `windows` and `cron` the window arithmetic both share.
"""
