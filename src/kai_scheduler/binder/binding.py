"""One bind (KAI `pkg/binder/binding`): the plugins' pre-bind steps in order, the bind annotations, the
`pods/binding`.

1. The pod is read and checked (still the request's pod, not bound yet) when a plugin has work for the request,
   and the plugins' pre-bind steps run on it in the configured order (`plugins.config`). For the others nothing is
   read: the binding answers NotFound (pod gone) or Conflict (already bound) itself, one request less.
2. The bind annotations, one patch of the pod when there is anything to write: the labels and annotations the
   pre-bind steps asked for, and a MIG pod's resource type and instances. The patch names the request's pod's uid,
   so a pod made again under its name gets none of them (a Conflict, as from the binding).
3. The binding, with the uid of the request's pod. If a later pre-bind step, the patch or the binding fails, what
   the pre-bind steps reserved is taken back (KAI's Rollback) and the error goes on to the binder, which records
   the failure; a step that waits (`PreBindPending`) leaves the earlier steps' work for the next pass. A
   failure without an answer (the API server killed mid-request) may have been carried out: the pod is read, and
   bound to the request's node the bind stands; when it cannot be read, `BindUnsure` (nothing taken back).

A NotFound from a pre-bind step is not the pod's (read just above) but something the bind needs: the node
(`hamicore`), the reservation namespace (`--resource-reservation-namespace` missing or deleted). It is a failure
to record and retry (`Missing`), not a pod gone, which the binder drops without a word.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kai_scheduler.api import constants, mig
from kai_scheduler.api.bindrequest import BindRequest
from kai_scheduler.binder.plugins.interface import BindingState, Plugin, PreBindFailed, PreBindPending
from kai_scheduler.store import interface as store_interface
from kai_scheduler.store.interface import (
    JSON,
    ClusterStore,
    Conflict,
    Invalid,
    NotFound,
    StoreError,
    may_have_been_done,
)

log = logging.getLogger(__name__)


class Missing(PreBindFailed):
    """Something a bind needs besides the pod was not found (the node, the reservation namespace)."""

    reason = "NotFound"


class BindUnsure(Exception):
    """The binding's answer was lost and the pod could not be read: whether it is bound is not known."""


class Binding:
    def __init__(self, store: ClusterStore, plugins: Sequence[Plugin]) -> None:
        self.store = store
        self.plugins = tuple(plugins)

    def bind(self, br: BindRequest, key: str) -> None:
        """Bind the request's pod (`key`: namespace/name). Raises NotFound or Conflict when the pod is gone,
        replaced or already bound; `PreBindPending` to try again later; `PreBindFailed` or a `StoreError` when
        the bind failed."""
        state = self._pre_bind(br, key)
        try:
            self._annotate(br, state)
            self.store.bind(br.meta.namespace, br.pod_name, br.selected_node, br.pod_uid)
        except StoreError as err:
            if not (may_have_been_done(err) and self._bound_after_all(br, err)):
                take_back(state)
                raise
            log.info(f"pod {key} bound to node {br.selected_node}, though the binding's answer was lost: {err}")

    def _bound_after_all(self, br: BindRequest, err: StoreError) -> bool:
        """After a patch or binding that failed without an answer: whether the server bound the pod to the
        request's node all the same, read from the pod; BindUnsure when it cannot be read (what the pre-bind steps
        reserved stays as it is until the retry knows)."""
        try:
            pod = self.store.get("pods", br.pod_name, br.meta.namespace)
        except NotFound:
            return False
        except StoreError as read:
            raise BindUnsure(f"{err}; the pod could not be read to see whether it was bound: {read}") from err
        return br.is_for(uid(pod)) and pod.get("spec", {}).get("nodeName") == br.selected_node

    def _pre_bind(self, br: BindRequest, key: str) -> BindingState | None:
        relevant = [plugin for plugin in self.plugins if plugin.is_relevant(br)]
        if not relevant:
            return None
        pod = self.store.get("pods", br.pod_name, br.meta.namespace)
        if not br.is_for(uid(pod)):
            raise NotFound(replaced(br, key, pod))
        if pod.get("spec", {}).get("nodeName"):
            raise Conflict(f"pod {key} is already bound")
        state = BindingState(br, pod)
        for plugin in relevant:
            try:
                plugin.pre_bind(state)
            except PreBindPending:
                raise  # asked again at the next pass: what the earlier steps did stays for it
            except NotFound as err:
                take_back(state)
                raise Missing(str(err)) from err
            except (PreBindFailed, StoreError):
                take_back(state)
                raise
        return state

    def _annotate(self, br: BindRequest, state: BindingState | None) -> None:
        labels = dict(state.labels) if state is not None else {}
        annotations = dict(state.annotations) if state is not None else {}
        if br.received_resource_type == "MigInstance":
            annotations[constants.ANNOTATION_RECEIVED_RESOURCE_TYPE] = br.received_resource_type
            instances = br.meta.annotations.get(mig.ANNOTATION_INSTANCES)
            if instances:
                annotations[mig.ANNOTATION_INSTANCES] = instances
        meta: JSON = {}
        if labels:
            meta["labels"] = labels
        if annotations:
            meta["annotations"] = annotations
        if not meta:
            return
        if br.pod_uid:  # to the request's pod only: the API server refuses the uid for a newer pod of the name
            meta["uid"] = br.pod_uid
        try:
            self.store.patch("pods", br.pod_name, br.meta.namespace, {"metadata": meta})
        except Invalid as err:
            if store_interface.replaced(err):  # as the binding's own uid precondition answers it
                raise Conflict(f"pod {br.meta.namespace}/{br.pod_name} is not the request's pod: {err}") from err
            raise


def take_back(state: BindingState | None) -> None:
    """Undo what the pre-bind steps reserved, in their order (KAI's Rollback after a failed bind). One undo that
    fails does not stop the others: what it leaves is said, and the owner's controller frees it."""
    if state is None:
        return
    for rollback in state.rollbacks:
        try:
            rollback()
        except StoreError as err:
            log.warning(
                f"pod {state.request.meta.namespace}/{state.request.pod_name}: taking back a bind step failed: {err}"
            )


def uid(pod: JSON) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def replaced(br: BindRequest, key: str, pod: JSON) -> str:
    """Why the request's pod is taken as gone: `pod` is another one, made under its name."""
    return f"pod {key} was deleted and made again under its name (uid {uid(pod)}; the request's pod was {br.pod_uid})"
