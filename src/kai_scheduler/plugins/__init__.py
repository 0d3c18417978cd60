"""Policy layer: one module per plugin, named as in the scheduler ConfigMap."""
