"""`kai operator` as a component: a reconcile every --reconcile-period (each reads the Config, the shards and
the operator's objects afresh: a handful of requests), under the Lease `kai-operator` with --leader-elect,
applying the install's Config and default SchedulingShard first (`--create-defaults`, `operator.defaults`: a CR
cannot be applied in the pass that creates its CRD, so the install hands them to the operator in a ConfigMap).
"""

from __future__ import annotations

import logging
from typing import Final

from prometheus_client import CollectorRegistry

from kai_scheduler.api import kaiconfig
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.operator.defaults import Defaults
from kai_scheduler.operator.reconciler import Reconciler
from kai_scheduler.runtime.components import Component
from kai_scheduler.runtime.options import OperatorOptions
from kai_scheduler.store import metrics
from kai_scheduler.store.interface import ClusterStore

log = logging.getLogger(__name__)

LEASE: Final = "kai-operator"
# In the `controller` label of controller-runtime's series: one pass over the Config and every SchedulingShard is
# one reconcile (KAI's operator has a `config` and a `schedulingshard` controller; here one pass does both).
CONTROLLER: Final = "config"


def operator(
    store: ClusterStore, options: OperatorOptions, clock: Clock, registry: CollectorRegistry | None = None
) -> Component:
    """`registry`: where controller-runtime's series of its passes are exported (None: nowhere)."""
    if options.reconcile_period <= 0:
        raise UserError(f"--reconcile-period: must be positive, got {options.reconcile_period}s")
    reconciler = Reconciler(store, options.namespace, clock, image=options.image)
    made = Defaults(store, options.namespace) if options.create_defaults else None
    work = metrics.controller(registry, CONTROLLER)

    def step() -> None:
        if made is not None:
            made.ensure()
        with work.reconcile(kaiconfig.NAME):
            reconciler.reconcile()

    return Component(
        "operator",
        LEASE,
        options.reconcile_period,
        step,
    )
