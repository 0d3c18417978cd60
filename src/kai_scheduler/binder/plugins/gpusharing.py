"""The binder plugin `gpusharing` (KAI's, §6, §8.1): before a shared-GPU pod is bound, reserve each GPU group it
was given (its reservation pod, created or reused: `reservation`), fill its shared-GPU ConfigMaps with the GPU
indices those pods hold (`shared_gpu_configmaps`; with `hamicore`, the GPU memory limit too), and ask the bind to
label the pod with its groups and annotate its resource type.

KAI reserves the GPUs in its bind flow before any plugin; here it is this plugin's first step, so a pod with
resource claims has them reserved (`dynamicresources`, which runs first) before its GPU groups.
"""

from __future__ import annotations

from typing import Final

from kai_scheduler.api import constants
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.binder import reservation
from kai_scheduler.binder.plugins import shared_gpu_configmaps
from kai_scheduler.binder.plugins.hamicore import HamiCore
from kai_scheduler.binder.plugins.interface import BindingState
from kai_scheduler.store.interface import ClusterStore


class GPUSharing:
    name: Final = "gpusharing"

    def __init__(
        self, store: ClusterStore, reservations: reservation.Reservations, hami_core: HamiCore | None = None
    ) -> None:
        self.store = store
        self.reservations = reservations
        self.hami_core = hami_core

    def is_relevant(self, request: BindRequest) -> bool:
        return bool(request.selected_gpu_groups)

    def pre_bind(self, state: BindingState) -> None:
        br = state.request
        indices = self.reservations.reserve(br, state.pod)
        limit = self.hami_core.limit(br) if self.hami_core is not None else None
        shared_gpu_configmaps.write(self.store, state.pod, br, indices, limit)
        groups = br.selected_gpu_groups
        state.labels[constants.LABEL_GPU_GROUP] = groups[0]
        for group in groups[1:]:
            state.labels[f"{constants.LABEL_GPU_GROUP}/{group}"] = group
        state.annotations[constants.ANNOTATION_RECEIVED_RESOURCE_TYPE] = br.received_resource_type
