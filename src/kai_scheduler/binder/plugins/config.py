"""Which binder plugins run, in what order (KAI `pkg/binder/plugins/config.go`, `factory.go`).

KAI's defaults, higher priority first: `volumebinding` 300, `dynamicresources` 200, `gpusharing` 100, `hamicore`
50 (off unless `binder.plugins.hamicore.enabled`). Here, in that order:

1. `dynamicresources`: the pod's resource claims allocated and reserved for it;
2. `gpusharing`: its GPU groups reserved, its shared-GPU ConfigMaps filled;
3. `hamicore` (`--hami-core-enabled`): the GPU memory limit, written by `gpusharing` in the same ConfigMap.

`volumebinding` has no counterpart: this project's model has no volumes (the scheduler places no
PersistentVolumeClaims). Only `hamicore` is a setting, as the chart's other `binder.plugins.*` values are ignored.
"""

from __future__ import annotations

from kai_scheduler.binder.plugins.dynamicresources import DynamicResources
from kai_scheduler.binder.plugins.gpusharing import GPUSharing
from kai_scheduler.binder.plugins.hamicore import HamiCore
from kai_scheduler.binder.plugins.interface import Plugin
from kai_scheduler.binder.reservation import Reservations
from kai_scheduler.store.interface import ClusterStore


def build(store: ClusterStore, reservations: Reservations, *, hami_core: bool = False) -> tuple[Plugin, ...]:
    """The enabled plugins, in the order their pre-bind steps run."""
    return DynamicResources(store), GPUSharing(store, reservations, HamiCore(store) if hami_core else None)
