"""Fake nodes: Node objects with GPU capacity on a real API server, and the kubelet that plays them.

For testing a control plane without GPUs (docs/fake-nodes.md): `nodes` builds the Node objects from a
`FleetSpec`, `fleet` creates or adopts them, `lifecycle` decides and writes what a kubelet does to one pod,
`heartbeat` keeps the nodes Ready (leases, Ready condition), `kubelet` drives it all from a LIST+WATCH of pods.
"""
