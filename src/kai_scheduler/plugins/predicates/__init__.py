"""The predicates plugin (`plugin`), with the lookups its node filters are built from that no other plugin
reads: blocking taints (`taints`) and the shared read-only masks (`masks`). Node labels as columns and the
session's pods for inter-pod (anti-)affinity, which podaffinity reads too, are the model's
(`cluster/node_labels.py`, `cluster/pod_affinity.py`). Read `plugin.py` first."""
