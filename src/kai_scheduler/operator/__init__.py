"""`kai operator`: the Config and SchedulingShard CRs reconciled into the components' Deployments, Services and
scheduler ConfigMaps (docs/operator.md)."""
