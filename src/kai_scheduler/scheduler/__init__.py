"""Component layer: the scheduler process around the policy (KAI `pkg/scheduler`, §3.1).

`scheduler.Scheduler.run_once` is one cycle: sync the cache, build the snapshot, open a session with the
configured plugins, run the actions, hand the committed decisions to `commit` (BindRequests, evictions,
PodGroup conditions, events), close the session. `result` is what a cycle decided and why (read by
`kai schedule`, the simulator and `metrics`); `config_file` reads configuration files with line numbers.

How to read it: `scheduler.py` top to bottom, then `commit.py`.
"""
