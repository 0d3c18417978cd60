"""Policy layer: the scheduling actions a cycle runs in configured order (KAI `pkg/scheduler/actions`, §3).

Each action is one module with a class whose `execute(ssn)` works only through the session and its
statements: `allocate` places pending jobs on free (or releasing) resources; `consolidation` moves running
pods to make room without evicting; `reclaim` takes back resources over a queue's fair share for a starved
queue; `preempt` evicts lower-priority jobs within a queue; `stalegangeviction` evicts gangs that stayed
below their minimum. `registry` maps ConfigMap names to the classes.

How to read it: start with `allocate.py` and `common/allocation.py` (placing one job's tasks); the victim
actions share `common/preemptors.py` (the job loop), `common/solver.py` (the search for victims of one job),
`common/scenario.py` and `common/victims.py` (which victims to try, in order), `common/budget.py` (how long
a search may run) and `common/signatures.py` (skipping jobs no easier than one that failed).
"""
