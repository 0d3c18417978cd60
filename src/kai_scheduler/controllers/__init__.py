"""The status controllers (KAI `podgroupcontroller` and `queuecontroller`, BEHAVIOR.md §8.4).

- `podgroup_status.PodGroupStatusController`: PodGroup `status.resourcesStatus` from its pods.
- `queue_status.QueueStatusController`: Queue `status` (allocated, allocatedNonPreemptible, requested,
  childQueues) from the PodGroups and the child queues, and the `kai_queue_*` Prometheus gauges.

Both are loops over a ClusterStore that react to what changed since their last `reconcile()` and write a
status only when it differs. They hold no scheduling policy; run the PodGroup controller first, so the queue
controller sums fresh PodGroup figures.
"""
