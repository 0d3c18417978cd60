"""`kai operator` as a component: a reconcile every --reconcile-period (each reads the Config, the shards and
the operator's objects afresh: a handful of requests), under the Lease `kai-operator` with --leader-elect,
creating the default Config and SchedulingShard first when they are missing (`--create-defaults`: a CR cannot
be applied in the pass that creates its CRD, so the install leaves them to the operator, as it leaves the
default queues to the controllers).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry

from kai_scheduler.api import kaiconfig, schedulingshard
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.errors import UserError
from kai_scheduler.operator.reconciler import Reconciler
from kai_scheduler.runtime.components import Component
from kai_scheduler.runtime.options import FALLBACK_NAMESPACE
from kai_scheduler.store import metrics
from kai_scheduler.store.interface import JSON, AlreadyExists, ClusterStore, NotFound, StoreError

log = logging.getLogger(__name__)

DEFAULT_SHARD: Final = "default"
LEASE: Final = "kai-operator"
# In the `controller` label of controller-runtime's series: one pass over the Config and every SchedulingShard is
# one reconcile (KAI's operator has a `config` and a `schedulingshard` controller; here one pass does both).
CONTROLLER: Final = "config"


@dataclass(frozen=True, slots=True)
class OperatorOptions:
    namespace: str = FALLBACK_NAMESPACE  # where the components are rendered
    image: str | None = None  # REPOSITORY:TAG of the components (None: the chart's default)
    reconcile_period: float = 1.0
    create_defaults: bool = True


def defaults() -> list[JSON]:
    """The Config `kai-config` and the SchedulingShard `default`, both with KAI's defaults (an empty spec)."""
    return [
        {"apiVersion": kaiconfig.API_VERSION, "kind": kaiconfig.KIND, "metadata": {"name": kaiconfig.NAME}, "spec": {}},
        {
            "apiVersion": schedulingshard.API_VERSION,
            "kind": schedulingshard.KIND,
            "metadata": {"name": DEFAULT_SHARD},
            "spec": {},
        },
    ]


class Defaults:
    """`ensure()` before each reconcile: creates what is missing until both exist once, then nothing (a default
    shard deleted later stays deleted)."""

    def __init__(self, store: ClusterStore) -> None:
        self.store = store
        self.done = False

    def ensure(self) -> None:
        if self.done:
            return
        resources = {kaiconfig.KIND: "configs", schedulingshard.KIND: "schedulingshards"}
        try:
            for obj in defaults():
                resource, name = resources[obj["kind"]], obj["metadata"]["name"]
                try:
                    self.store.get(resource, name)
                    continue
                except NotFound:
                    pass
                try:
                    self.store.create(obj)
                    log.info("created the default", extra={"kind": obj["kind"], "object": name})
                except AlreadyExists:
                    pass
        except StoreError as err:
            log.warning("defaults not created yet, retrying", extra={"reason": str(err)})
            return
        self.done = True


def operator(
    store: ClusterStore, options: OperatorOptions, clock: Clock, registry: CollectorRegistry | None = None
) -> Component:
    """`registry`: where controller-runtime's series of its passes are exported (None: nowhere)."""
    if options.reconcile_period <= 0:
        raise UserError(f"--reconcile-period: must be positive, got {options.reconcile_period}s")
    reconciler = Reconciler(store, options.namespace, clock, image=options.image)
    made = Defaults(store) if options.create_defaults else None
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
