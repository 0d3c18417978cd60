"""What a kubelet does to one pod, as pure functions: read the pod, decide, and write the status bodies.

- A pod bound to a node and Pending is started: one status write (Running, startTime, conditions, running
  containers).
- A running pod whose `kai.scheduler/fake-duration` (a Go duration) has elapsed since it started finishes:
  one status write (Succeeded, containers terminated with exit code 0). Without the annotation it runs on.
- A pod with a deletionTimestamp (deleted or evicted) is removed once that instant (the end of its grace
  period, as the API server sets it) has passed: unless it already ended, first one status write (Failed,
  containers terminated by the kill), as a kubelet does, then a delete with grace period 0. A Job's pods keep
  the Job controller's `batch.kubernetes.io/job-tracking` finalizer until their phase is terminal; without the
  phase they stayed terminating until the scheduler counted them stuck (`stuck-in-releasing-threshold`).

`removal_due` and `awaiting_start` are also the simulator's kubelet's decisions (sim/kubelet.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.api.duration import parse_duration
from kai_scheduler.api.errors import ObjectError
from kai_scheduler.api.fields import format_time, parse_time
from kai_scheduler.store.interface import JSON

ANNOTATION_FAKE_DURATION = "kai.scheduler/fake-duration"
ANNOTATION_GPU_INDEX = "run.ai/reserve_for_gpu_index"  # what the device plugin tells a reservation pod (§6)
TERMINAL_PHASES = ("Succeeded", "Failed")
_READY_CONDITIONS = ("PodScheduled", "Initialized", "ContainersReady", "Ready")


def removal_due(deletion_timestamp: str, now: float) -> bool:
    """A terminating pod is gone once its deletionTimestamp (the end of its grace period) has passed."""
    return parse_time(deletion_timestamp) <= now


def termination_delay(meta: JSON) -> float | None:
    """How long after its deletionTimestamp a terminating pod is gone, when its `kai.scheduler/fake-terminates-
    after` annotation says (a scenario's `terminatesAfter`): seconds, `math.inf` for never; None when unset or
    unreadable (the pod goes at its deletionTimestamp)."""
    written = (meta.get("annotations") or {}).get(constants.ANNOTATION_FAKE_TERMINATES_AFTER)
    if written is None:
        return None
    if written == "never":
        return math.inf
    try:
        return max(0.0, parse_duration(written))
    except ValueError:
        return None


def awaiting_start(pod: JSON) -> bool:
    """Bound to a node, not terminating, and still Pending: the kubelet starts it."""
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    return (
        bool(spec.get("nodeName")) and not meta.get("deletionTimestamp") and status.get("phase", "Pending") == "Pending"
    )


@dataclass(frozen=True, slots=True)
class PodView:
    """The fields of a pod the fake kubelet reads."""

    namespace: str
    name: str
    uid: str
    node: str
    phase: str
    start_time: float | None
    deletion: str | None
    duration: str | None  # the annotation as written
    containers: tuple[tuple[str, str], ...]  # (name, image)
    init_containers: tuple[tuple[str, str], ...]
    reservation: bool  # a GPU reservation pod (§6): it learns its GPU index from the "device plugin"
    gpu_index: str | None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def read_pod(obj: JSON) -> PodView:
    """The pod's view; ObjectError naming the field when a field the kubelet needs is malformed."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(name, str):
        raise ObjectError("Pod", "?", "metadata.name", "missing")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
    for field, value in (
        ("spec", spec),
        ("status", status),
        ("metadata.annotations", annotations),
        ("metadata.labels", labels),
    ):
        if not isinstance(value, dict):
            raise ObjectError("Pod", name, field, f"expected an object, got {type(value).__name__}")
    node = spec.get("nodeName") or ""
    phase = status.get("phase") or "Pending"
    if not isinstance(node, str) or not isinstance(phase, str):
        raise ObjectError(
            "Pod", name, "spec.nodeName" if not isinstance(node, str) else "status.phase", "expected a string"
        )
    deletion = meta.get("deletionTimestamp")
    duration = annotations.get(ANNOTATION_FAKE_DURATION)
    index = annotations.get(ANNOTATION_GPU_INDEX)
    return PodView(
        namespace=str(meta.get("namespace") or ""),
        name=name,
        uid=str(meta.get("uid") or ""),
        node=node,
        phase=phase,
        start_time=_time(name, "status.startTime", status.get("startTime")),
        deletion=None if deletion is None else _timestamp(name, "metadata.deletionTimestamp", deletion),
        duration=None if duration is None else str(duration),
        containers=_containers(name, "spec.containers", spec.get("containers")),
        init_containers=_containers(name, "spec.initContainers", spec.get("initContainers")),
        reservation=labels.get("app") == constants.RESERVATION_APP_LABEL_VALUE,
        gpu_index=None if index is None else str(index),
    )


def duration_of(pod: PodView) -> float | None:
    """Seconds the pod runs (None: forever); ObjectError on an annotation that is not a Go duration."""
    if pod.duration is None:
        return None
    try:
        seconds = parse_duration(pod.duration)
    except ValueError as err:
        raise ObjectError("Pod", pod.key, f"metadata.annotations[{ANNOTATION_FAKE_DURATION}]", str(err)) from None
    if seconds < 0:
        raise ObjectError(
            "Pod",
            pod.key,
            f"metadata.annotations[{ANNOTATION_FAKE_DURATION}]",
            f"must not be negative, got {pod.duration!r}",
        )
    return seconds


def running_status(pod: PodView, now: float) -> JSON:
    """The status patch that starts a pod."""
    at = format_time(now)
    return {
        "status": {
            "phase": "Running",
            "startTime": at,
            "conditions": [_condition(kind, "True", at) for kind in _READY_CONDITIONS],
            "initContainerStatuses": [
                _container(n, i, False, {"terminated": _terminated(at, at)}) for n, i in pod.init_containers
            ]
            or None,
            "containerStatuses": [_container(n, i, True, {"running": {"startedAt": at}}) for n, i in pod.containers],
        }
    }


def succeeded_status(pod: PodView, started: float, now: float) -> JSON:
    """The status patch that ends a pod: every container exited 0."""
    return _ended(pod, started, now, "Succeeded", "PodCompleted", exit_code=0, reason="Completed")


def killed_status(pod: PodView, started: float | None, now: float) -> JSON:
    """The status patch of a deleted pod whose containers were killed (exit 137): Failed, as a kubelet writes it
    before the pod goes."""
    return _ended(pod, now if started is None else started, now, "Failed", "PodFailed", exit_code=137, reason="Error")


def _ended(
    pod: PodView, started: float, now: float, phase: str, condition_reason: str, *, exit_code: int, reason: str
) -> JSON:
    start, end = format_time(started), format_time(now)
    conditions = [_condition(kind, "True", start) for kind in _READY_CONDITIONS[:2]]
    conditions += [{**_condition(kind, "False", end), "reason": condition_reason} for kind in _READY_CONDITIONS[2:]]
    terminated = {**_terminated(start, end), "exitCode": exit_code, "reason": reason}
    return {
        "status": {
            "phase": phase,
            "conditions": conditions,
            "containerStatuses": [_container(n, i, False, {"terminated": terminated}) for n, i in pod.containers],
        }
    }


def _condition(kind: str, status: str, at: str) -> JSON:
    return {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": at}


def _container(name: str, image: str, ready: bool, state: JSON) -> JSON:
    return {
        "name": name,
        "image": image,
        "imageID": "",
        "ready": ready,
        "started": ready,
        "restartCount": 0,
        "state": state,
    }


def _terminated(start: str, end: str) -> JSON:
    return {"exitCode": 0, "reason": "Completed", "startedAt": start, "finishedAt": end}


def _containers(pod: str, field: str, raw: Any) -> tuple[tuple[str, str], ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ObjectError("Pod", pod, field, f"expected a list, got {type(raw).__name__}")
    out = []
    for i, c in enumerate(raw):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise ObjectError("Pod", pod, f"{field}[{i}].name", "missing")
        out.append((c["name"], str(c.get("image") or "")))
    return tuple(out)


def _time(pod: str, field: str, raw: Any) -> float | None:
    return None if raw is None else parse_time(_timestamp(pod, field, raw))


def _timestamp(pod: str, field: str, raw: Any) -> str:
    try:
        parse_time(raw)
    except (TypeError, ValueError, AttributeError):
        raise ObjectError("Pod", pod, field, f"not an RFC 3339 time: {raw!r}") from None
    return str(raw)
