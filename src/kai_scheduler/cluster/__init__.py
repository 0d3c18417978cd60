"""Model layer: the cluster as one scheduling cycle sees it (KAI `pkg/scheduler/api`, §2).

`snapshot.build` turns typed API objects into a `Snapshot`: nodes with their resource ledgers as numpy
arrays (`node_info`), pods as tasks with a placement and status (`pod_info`, `pod_status`), PodGroups as
jobs with their subgroup tree (`job_info`), and the queue tree (`queue_info`); `resources` names the vector
columns. Bad objects become `Problem`s, never exceptions. Nothing here knows of plugins or actions: the
session (framework layer) changes the model only through `Snapshot.move`, called by statements.

How to read it: the `snapshot` package first (`snapshot/full.py`: the build steps, in order), then `pod_info.py`
and `node_info.py`.
"""
