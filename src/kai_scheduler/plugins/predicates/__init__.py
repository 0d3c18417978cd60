"""The predicates plugin (`plugin`), with the lookups its node filters are built from: node labels as
columns (`labels`), blocking taints (`taints`), the session's pods for inter-pod (anti-)affinity
(`podaffinity`) and the shared read-only masks (`masks`). Read `plugin.py` first."""
