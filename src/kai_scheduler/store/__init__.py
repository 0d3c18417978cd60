"""Store layer: the ClusterStore interface and its implementations."""
