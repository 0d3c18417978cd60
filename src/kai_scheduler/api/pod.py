"""Pod (`v1`): what the scheduler reads of a pod, and the few fields it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kai_scheduler.api import constants, dra, mig, quantity, selectors
from kai_scheduler.api.fields import JSON, Reader
from kai_scheduler.api.meta import ObjectMeta
from kai_scheduler.api.resources import NO_GPU, GpuRequest, gpu_request, plain_pod_requests, pod_requests

PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


@dataclass(slots=True, kw_only=True)
class Pod:
    meta: ObjectMeta
    phase: str = "Pending"
    node_name: str = ""
    scheduler_name: str = constants.DEFAULT_SCHEDULER_NAME
    priority_class_name: str = ""
    requests: dict[str, float] = field(default_factory=dict)
    gpu: GpuRequest = NO_GPU
    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: tuple[selectors.NodeSelectorTerm, ...] = ()
    pod_affinity: tuple[selectors.PodAffinityTerm, ...] = ()
    pod_anti_affinity: tuple[selectors.PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[selectors.WeightedPodAffinityTerm, ...] = ()
    preferred_pod_anti_affinity: tuple[selectors.WeightedPodAffinityTerm, ...] = ()
    tolerations: tuple[selectors.Toleration, ...] = ()
    scheduling_gated: bool = False
    nominated_node_name: str = ""
    resource_claims: tuple[dra.PodClaim, ...] = ()  # spec.resourceClaims
    claim_statuses: dict[str, str] = field(default_factory=dict)  # pod claim → ResourceClaim made from its template
    # The message of its `PodScheduled=False` condition of reason Unschedulable (None: it has none): what the
    # scheduler last told the pod, compared before telling it again.
    unschedulable_message: str | None = None

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @classmethod
    def from_dict(cls, data: JSON) -> Pod:
        """Parse a pod. A pod that is what nearly every pod is (plain fields, plain containers, no affinity) is
        read straight from its dicts; anything else, and every error, goes through the field reader."""
        r = Reader(data, "Pod")
        spec, status = data.get("spec"), data.get("status")
        if type(spec) is dict and (status is None or type(status) is dict):
            plain = _read_plain(cls, r, spec, status or {})
            if plain is not None:
                return plain
        return cls._read_checked(r)

    @classmethod
    def _read_checked(cls, r: Reader) -> Pod:
        meta = ObjectMeta.read(r)
        phase = r.str("status.phase", "Pending")
        if phase not in PHASES:
            raise r.error("status.phase", f"unknown phase {phase!r}; want one of {', '.join(PHASES)}")
        requests = pod_requests(r)
        pod = cls(
            meta=meta,
            phase=phase,
            node_name=r.str("spec.nodeName"),
            scheduler_name=r.str("spec.schedulerName", "default-scheduler"),
            priority_class_name=r.str("spec.priorityClassName"),
            requests=requests,
            gpu=gpu_request(r, requests, meta.annotations),
            node_selector=r.str_map("spec.nodeSelector"),
            tolerations=_tolerations(r),
            scheduling_gated=bool(r.list("spec.schedulingGates")),
            nominated_node_name=r.str("status.nominatedNodeName"),
            resource_claims=dra.pod_claims(r),
            claim_statuses=dra.pod_claim_statuses(r),
            unschedulable_message=unschedulable_message(r.get("status.conditions")),
        )
        _read_affinity(pod, r)  # last, as the plain path reads it: the same first error either way
        return pod

    def to_dict(self) -> JSON:
        """The pod as Kubernetes JSON. Its containers are written as one container carrying the summed
        request the scheduler counts, so the result parses back to an equal Pod."""
        requests = {
            n: quantity.format_resource(n, v)
            for n, v in sorted(self.requests.items())
            if n != constants.RESOURCE_PODS and v
        }
        container: JSON = {"name": "main", "resources": {"requests": requests}}
        limits = {n: v for n, v in requests.items() if n == constants.RESOURCE_GPU or mig.is_mig_resource(n)}
        if limits:  # extended resources are requested through limits
            container["resources"]["limits"] = limits
        spec: JSON = {"schedulerName": self.scheduler_name, "containers": [container]}
        for key, value in (("nodeName", self.node_name), ("priorityClassName", self.priority_class_name)):
            if value:
                spec[key] = value
        if self.node_selector:
            spec["nodeSelector"] = dict(self.node_selector)
        affinity = self._affinity_dict()
        if affinity:
            spec["affinity"] = affinity
        if self.tolerations:
            spec["tolerations"] = [selectors.toleration_dict(t) for t in self.tolerations]
        if self.scheduling_gated:
            spec["schedulingGates"] = [{"name": "gated"}]
        if self.resource_claims:
            spec["resourceClaims"] = dra.pod_claims_dict(self.resource_claims)
        status: JSON = {"phase": self.phase}
        if self.nominated_node_name:
            status["nominatedNodeName"] = self.nominated_node_name
        if self.claim_statuses:
            status["resourceClaimStatuses"] = [
                {"name": n, "resourceClaimName": c} for n, c in sorted(self.claim_statuses.items())
            ]
        if self.unschedulable_message is not None:
            status["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": self.unschedulable_message,
                }
            ]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": self.meta.to_dict(), "spec": spec, "status": status}

    def _affinity_dict(self) -> JSON:
        out: JSON = {}
        if self.node_affinity:
            terms = [selectors.node_selector_term_dict(t) for t in self.node_affinity]
            out["nodeAffinity"] = {_REQUIRED: {"nodeSelectorTerms": terms}}
        for kind, required, preferred in (
            ("podAffinity", self.pod_affinity, self.preferred_pod_affinity),
            ("podAntiAffinity", self.pod_anti_affinity, self.preferred_pod_anti_affinity),
        ):
            part: JSON = {}
            if required:
                part[_REQUIRED] = [selectors.pod_affinity_term_dict(t) for t in required]
            if preferred:
                part[_PREFERRED] = [selectors.weighted_pod_affinity_term_dict(t) for t in preferred]
            if part:
                out[kind] = part
        return out


_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


def _read_plain(cls: type[Pod], r: Reader, spec: JSON, status: JSON) -> Pod | None:
    """The pod from plain fields, or None when some field needs the checked reader (affinity, tolerations and
    gates, when present, are read by the same checked helpers either way)."""
    node_name, scheduler, priority_class = (
        spec.get("nodeName"),
        spec.get("schedulerName"),
        spec.get("priorityClassName"),
    )
    if (
        (node_name is not None and type(node_name) is not str)
        or (scheduler is not None and type(scheduler) is not str)
        or (priority_class is not None and type(priority_class) is not str)
    ):
        return None
    phase, nominated = status.get("phase", "Pending"), status.get("nominatedNodeName")
    phase = "Pending" if phase is None else phase
    if phase not in PHASES or (nominated is not None and type(nominated) is not str):
        return None
    selector = spec.get("nodeSelector")
    if selector is not None and (type(selector) is not dict or any(type(v) is not str for v in selector.values())):
        return None
    requests = plain_pod_requests(spec)
    if requests is None:
        return None
    meta = ObjectMeta.read(r)
    pod = object.__new__(cls)  # `__init__` as a function: see `meta._read_plain`
    cls.__init__(
        pod,
        meta=meta,
        phase=phase,
        node_name=node_name or "",
        scheduler_name="default-scheduler" if scheduler is None else scheduler,  # "" stays "", as `Reader.str`
        priority_class_name=priority_class or "",
        requests=requests,
        gpu=gpu_request(r, requests, meta.annotations),
        node_selector=dict(selector or {}),
        tolerations=_tolerations(r) if spec.get("tolerations") is not None else (),
        scheduling_gated=bool(r.list("spec.schedulingGates")) if spec.get("schedulingGates") is not None else False,
        nominated_node_name=nominated or "",
        resource_claims=dra.pod_claims(r) if spec.get("resourceClaims") is not None else (),
        claim_statuses=dra.pod_claim_statuses(r) if status.get("resourceClaimStatuses") is not None else {},
        unschedulable_message=unschedulable_message(status.get("conditions")),
    )
    if spec.get("affinity") is not None:  # most pods have none: their fields keep the defaults
        _read_affinity(pod, r)
    return pod


def _read_affinity(pod: Pod, r: Reader) -> None:
    pod.node_affinity = _node_affinity(r)
    pod.pod_affinity = _affinity_terms(r, "podAffinity")
    pod.pod_anti_affinity = _affinity_terms(r, "podAntiAffinity")
    pod.preferred_pod_affinity = _preferred_terms(r, "podAffinity")
    pod.preferred_pod_anti_affinity = _preferred_terms(r, "podAntiAffinity")


def unschedulable_message(conditions: object) -> str | None:
    """The message of the `PodScheduled=False` condition of reason Unschedulable in `status.conditions` (None
    when there is none). Conditions are written by others too: one not shaped as expected is passed over."""
    if type(conditions) is not list:
        return None
    for c in conditions:
        if (
            type(c) is dict
            and c.get("type") == "PodScheduled"
            and c.get("status") == "False"
            and c.get("reason") == "Unschedulable"
        ):
            message = c.get("message")
            return message if type(message) is str else ""
    return None


def _node_affinity(r: Reader) -> tuple[selectors.NodeSelectorTerm, ...]:
    path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    return selectors.parse_node_selector_terms(r.get(path), "Pod", r.name, path)


def _affinity_terms(r: Reader, kind: str) -> tuple[selectors.PodAffinityTerm, ...]:
    path = f"spec.affinity.{kind}.{_REQUIRED}"
    terms = []
    for i, raw in enumerate(r.list(path)):
        if not isinstance(raw, dict):
            raise r.error(f"{path}[{i}]", f"expected a pod affinity term, got {raw!r}")
        terms.append(_affinity_term(r, raw, f"{path}[{i}]"))
    return tuple(terms)


def _preferred_terms(r: Reader, kind: str) -> tuple[selectors.WeightedPodAffinityTerm, ...]:
    """The weighted (soft) terms of `kind`; a weight is 1 to 100, as the API server validates it."""
    path = f"spec.affinity.{kind}.{_PREFERRED}"
    terms = []
    for i, raw in enumerate(r.list(path)):
        if not isinstance(raw, dict):
            raise r.error(f"{path}[{i}]", f"expected a weighted pod affinity term, got {raw!r}")
        weight = raw.get("weight")
        if type(weight) is not int or not 1 <= weight <= 100:
            raise r.error(f"{path}[{i}].weight", f"expected an integer from 1 to 100, got {weight!r}")
        term = raw.get("podAffinityTerm")
        if not isinstance(term, dict):
            raise r.error(f"{path}[{i}].podAffinityTerm", f"expected a pod affinity term, got {term!r}")
        terms.append(selectors.WeightedPodAffinityTerm(weight, _affinity_term(r, term, f"{path}[{i}].podAffinityTerm")))
    return tuple(terms)


def _affinity_term(r: Reader, raw: JSON, path: str) -> selectors.PodAffinityTerm:
    key = raw.get("topologyKey")
    if not isinstance(key, str) or not key:
        raise r.error(f"{path}.topologyKey", "missing topology key")
    namespaces: Any = raw.get("namespaces") or []
    chosen = raw.get("namespaceSelector")
    return selectors.PodAffinityTerm(
        selectors.parse_label_selector(raw.get("labelSelector"), "Pod", r.name, f"{path}.labelSelector"),
        key,
        tuple(str(n) for n in namespaces),
        None if chosen is None else selectors.parse_label_selector(chosen, "Pod", r.name, f"{path}.namespaceSelector"),
    )


def _tolerations(r: Reader) -> tuple[selectors.Toleration, ...]:
    out = []
    for i, t in enumerate(r.list("spec.tolerations")):
        if not isinstance(t, dict):
            raise r.error(f"spec.tolerations[{i}]", f"expected a toleration, got {t!r}")
        op = t.get("operator", "Equal")
        if op not in ("Equal", "Exists"):
            raise r.error(f"spec.tolerations[{i}].operator", f"unknown operator {op!r}")
        out.append(
            selectors.Toleration(str(t.get("key") or ""), op, str(t.get("value") or ""), str(t.get("effect") or ""))
        )
    return tuple(out)
