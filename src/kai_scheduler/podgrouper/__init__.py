"""The pod grouper component: one PodGroup per workload, from the pod's owner chain (KAI `pkg/podgrouper`, §8.2).

- `grouper`: the component loop over a ClusterStore (pods in, PodGroups and pod annotations/labels out).
- `hub`: which grouper serves which top-owner kind, and the kinds whose top owner is skipped.
- `context`: what a grouper is given (the pod, its owner chain read unstructured, configuration, lookups).
- `default`: the default grouper (queue, priority, preemptibility, topology, delays from labels and
  annotations; minMember 1) that every other grouper starts from, plus the per-pod Deployment grouper.
- One module per workload family: `batch`, `kubeflow`, `ray`, `jobset`, `lws`, `knative`, `notebook`,
  `grove`.

Groupers are pure functions of their context: no I/O beyond the context's lookups, no scheduling policy.
"""
