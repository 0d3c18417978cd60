"""Framework layer: what plugins and actions plug into (KAI `pkg/scheduler/framework`, §3-§4).

`points` declares the extension points, each with the rule by which plugin answers combine; `dispatch`
implements one dispatcher per rule; `session` holds one cycle's world (snapshot, registered callbacks,
committed decisions, fit errors) and is what actions talk to; `statement` is the transaction actions change
the model in (checkpoint, rollback, commit). `config` parses the ConfigMap-shaped scheduler configuration,
`fit` is the resource fit every placement must pass, `shares` the per-queue figures plugins answer with.

How to read it: `points.py` (the contract with plugins), then `session.py`, then `statement.py`.
"""
