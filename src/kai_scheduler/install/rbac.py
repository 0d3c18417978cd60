"""Least-privilege RBAC: one ServiceAccount, ClusterRole and namespaced Role per component.

Each verb below is one the component's code calls on the store (read from the code, noted per rule):
reads of an informer are get/list/watch, `patch(…, "status")` is patch on the status subresource, `bind` is
create on pods/binding, `evict` is create on pods/eviction. Leases (leader election) and the admission
component's certificate Secret are only granted in the install namespace; reservation pods only in theirs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kai_scheduler.api import constants
from kai_scheduler.install.objects import (
    COMPONENTS,
    OPERATOR,
    OPERATOR_ONLY,
    WEBHOOK_CONFIGURATION,
    InstallObject,
    cluster_scoped,
    resource_name,
    when,
)
from kai_scheduler.install.objects import namespaced as namespaced_meta
from kai_scheduler.install.source import Source
from kai_scheduler.store.interface import RESOURCES

Rule = dict[str, Any]

READ = ["get", "list", "watch"]
SCHEDULING = "scheduling.run.ai"
KAI = "kai.scheduler"

# Kinds of the store that are not workload owners; every other kind in RESOURCES is one the podgrouper may
# meet as a pod's owner, or reads to group one (Grove's PodGang, Volcano's PodGroup), and lists and watches
# (`podgrouper.owners`; by name where it may not list).
_NOT_OWNERS = {
    "nodes",
    "services",
    "serviceaccounts",
    "schedulingshards",
    "configs",
    "namespaces",
    "pods",
    "events",
    "configmaps",
    "priorityclasses",
    "podgroups",
    "queues",
    "bindrequests",
    "topologies",
    "leases",
    "secrets",
    "validatingwebhookconfigurations",
    "mutatingwebhookconfigurations",
    "deviceclasses",
    "resourceslices",
    "resourceclaims",
    "resourceclaimtemplates",
}
RESOURCE = "resource.k8s.io"


def rule(groups: list[str], resources: list[str], verbs: list[str], names: list[str] | None = None) -> Rule:
    out: Rule = {"apiGroups": groups, "resources": resources, "verbs": verbs}
    if names:
        out["resourceNames"] = names
    return out


def owner_rules() -> list[Rule]:
    """get, list and watch on every workload owner kind the store serves, one rule per API group (sorted)."""
    by_group: dict[str, set[str]] = defaultdict(set)
    for res in RESOURCES.values():
        if res.plural not in _NOT_OWNERS:
            group = res.api_version.rpartition("/")[0]
            by_group[group].add(res.path_name)
    return [rule([group], sorted(names), READ) for group, names in sorted(by_group.items())]


EVENTS = rule([""], ["events"], ["create"])  # scheduler/commit.py: created once each, never patched
# The scheduler's --dashboard-address shows its recent decisions from its own events.
SCHEDULER_EVENTS = rule([""], ["events"], ["create", *READ])
DRA_READ = rule([RESOURCE], ["deviceclasses", "resourceslices", "resourceclaims", "resourceclaimtemplates"], READ)

CLUSTER_RULES: dict[str, list[Rule]] = {
    # store/cache.py SCHEDULER_RESOURCES (informers); scheduler/commit.py writes.
    "scheduler": [
        rule([""], ["nodes"], READ),
        rule([""], ["namespaces"], READ),  # namespace labels: affinity namespaceSelector, queue access control
        rule([""], ["pods"], [*READ, "patch"]),  # a shard's node-pool label on the pods it places
        rule([""], ["pods/status"], ["patch"]),  # nominatedNodeName, PodScheduled condition
        rule([""], ["pods/eviction"], ["create"]),
        rule([SCHEDULING], ["podgroups"], [*READ, "patch"]),  # last-start / last-eviction annotations
        rule([SCHEDULING], ["podgroups/status"], ["patch"]),  # schedulingConditions
        rule([SCHEDULING], ["queues"], READ),
        rule([SCHEDULING], ["bindrequests"], [*READ, "create", "delete"]),
        rule(["scheduling.k8s.io"], ["priorityclasses"], READ),
        rule([KAI], ["topologies"], READ),
        SCHEDULER_EVENTS,
        DRA_READ,
    ],
    # binder/ (reservation pods are created/deleted in their own namespace: binder/reservation.py).
    "binder": [
        rule([""], ["pods"], [*READ, "patch"]),  # GPU-group label, received-resource-type
        rule([""], ["pods/binding"], ["create"]),
        rule([SCHEDULING], ["bindrequests"], READ),
        rule([SCHEDULING], ["bindrequests/status"], ["patch"]),
        rule([""], ["configmaps"], ["create", "patch"]),  # binder/plugins/shared_gpu_configmaps.py
        rule([""], ["nodes"], ["get"]),  # binder/plugins/hamicore.py: the GPU memory label of the pod's node
        rule([RESOURCE], ["resourceclaims"], READ),  # binder/plugins/dynamicresources.py: allocation and reservedFor
        rule([RESOURCE], ["resourceclaims/status"], ["update", "patch"]),
        EVENTS,  # Bound / BindingError on the pod
    ],
    # podgrouper/grouper.py: pods watched and annotated, PodGroups created/updated, owners watched; namespaces
    # watched with --namespace-label-selector (podgrouper/scope.py).
    "podgrouper": [
        rule([""], ["pods"], [*READ, "patch"]),
        rule([""], ["namespaces"], READ),
        rule([SCHEDULING], ["podgroups"], [*READ, "create", "update", "patch"]),
        rule(["scheduling.k8s.io"], ["priorityclasses"], READ),
        rule([""], ["configmaps"], ["get"]),  # podgrouper/type_defaults.py: the default priorities ConfigMap
        *owner_rules(),
        EVENTS,  # PodGrouperWarning on a pod not grouped as it asked (grouper._report)
    ],
    # controllers/podgroup_status.py, controllers/queue_status.py, controllers/default_queues.py (get, create).
    "controllers": [
        rule([""], ["pods"], READ),
        rule([SCHEDULING], ["podgroups"], READ),
        rule([SCHEDULING], ["podgroups/status"], ["patch"]),
        rule([SCHEDULING], ["queues"], [*READ, "create"]),
        rule([SCHEDULING], ["queues/status"], ["patch"]),
        rule([SCHEDULING], ["bindrequests"], READ),
        rule(["scheduling.k8s.io"], ["priorityclasses"], READ),
        rule([RESOURCE], ["resourceclaims", "resourceclaimtemplates", "resourceslices"], READ),  # claim_gpus.py
    ],
    # admission/queue.py reads queues (the parent by name, the siblings by list), admission/podgroup.py a topology
    # by name, admission/access.py a namespace by name; admission/certs.py injects its CA bundle into the two
    # configurations (get, then update).
    "admission": [
        rule([SCHEDULING], ["queues"], ["get", "list"]),
        rule([KAI], ["topologies"], ["get"]),
        rule([""], ["namespaces"], ["get"]),
        rule(
            ["admissionregistration.k8s.io"],
            ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
            ["get", "update"],
            [WEBHOOK_CONFIGURATION],
        ),
    ],
    # nodescaleadjuster/adjuster.py watches every pod; it writes only its scaling pods (SCALING_RULES).
    "node-scale-adjuster": [rule([""], ["pods"], READ)],
}

WRITE = ["create", "update", "patch", "delete"]

# operator/reconciler.py: reads the Config and SchedulingShards, writes their status; operator/defaults.py creates and
# patches the install's Config and default shard. It renders into the Config's `spec.namespace`, any namespace, so
# what it renders is granted cluster-wide, as KAI's ClusterRole `kai-operator` grants it; and the pod webhooks'
# selectors.
CLUSTER_RULES[OPERATOR] = [
    rule([KAI], ["configs", "schedulingshards"], [*READ, "create", "patch"]),
    rule([KAI], ["configs/status", "schedulingshards/status"], ["update", "patch"]),
    rule(["apps"], ["deployments"], [*READ, *WRITE]),
    rule([""], ["services", "configmaps", "serviceaccounts"], [*READ, *WRITE]),
    # operator/webhooks.py: the pod webhooks' selectors from the Config (get, then update).
    rule(
        ["admissionregistration.k8s.io"],
        ["validatingwebhookconfigurations", "mutatingwebhookconfigurations"],
        ["get", "update"],
        [WEBHOOK_CONFIGURATION],
    ),
]

LEASES = rule(["coordination.k8s.io"], ["leases"], ["get", "create", "update"])

# Rules granted in the install namespace only: the Leases of leader election (runtime/leader.py), and the
# admission component's certificate Secret (admission/certs.py; the admission replicas do not elect a leader).
NAMESPACE_RULES: dict[str, list[Rule]] = {
    "scheduler": [LEASES],
    "binder": [LEASES],
    "podgrouper": [LEASES],
    "controllers": [LEASES],
    "admission": [rule([""], ["secrets"], ["get", "create", "update"])],
    OPERATOR: [LEASES],
    "node-scale-adjuster": [LEASES],
}

# The node-scale-adjuster's scaling pods live in `nodeScaleAdjuster.scalingPodNamespace` (adjuster.py: create,
# patch of their member labels, delete).
SCALING_RULES = [rule([""], ["pods"], ["create", "delete", "patch"])]

# The binder's reservation pods live in `binder.resourceReservationNamespace`.
RESERVATION_RULES = [rule([""], ["pods"], ["create", "delete", "patch"])]
# The reservation pods' own ServiceAccount (`binder.resourceReservationServiceAccount`): the reservation image
# reads and patches its own pod with the GPU index it was given (KAI's `kai-resource-reservation` role's verbs).
RESERVATION_POD_ROLE = constants.RESERVATION_SERVICE_ACCOUNT
RESERVATION_POD_RULES = [rule([""], ["pods"], ["get", "list", "watch", "patch", "update"])]


def build(src: Source) -> list[InstallObject]:
    accounts, cluster_roles, cluster_bindings, roles, bindings = [], [], [], [], []
    for component in (*COMPONENTS, OPERATOR):
        name = resource_name(component)
        only = when(component)
        accounts.append(
            _object(
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": namespaced_meta(src, name, component)}, only
            )
        )
        cluster_roles.append(
            _object(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": cluster_scoped(name, component),
                    "rules": CLUSTER_RULES[component],
                },
                only,
            )
        )
        cluster_bindings.append(
            _object(_binding(src, "ClusterRoleBinding", cluster_scoped(name, component), "ClusterRole", name), only)
        )
        roles.append(
            _object(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "Role",
                    "metadata": namespaced_meta(src, name, component),
                    "rules": NAMESPACE_RULES[component],
                },
                only,
            )
        )
        bindings.append(
            _object(_binding(src, "RoleBinding", namespaced_meta(src, name, component), "Role", name), only)
        )
    reservation = f"{resource_name('binder')}-reservation"
    meta = {
        "name": reservation,
        "namespace": src.value("binder.resourceReservationNamespace"),
        "labels": namespaced_meta(src, reservation, "binder")["labels"],
    }
    roles.append(
        _object(
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": RESERVATION_RULES}
        )
    )
    bindings.append(_object(_binding(src, "RoleBinding", dict(meta), "Role", reservation, account="binder")))
    accounts.append(_object(_reservation_account(src)))
    pod_meta = {**meta, "name": RESERVATION_POD_ROLE}
    roles.append(
        _object(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": dict(pod_meta),
                "rules": RESERVATION_POD_RULES,
            }
        )
    )
    bindings.append(_object(_reservation_binding(src, dict(pod_meta))))
    adjuster = "node-scale-adjuster"
    scaling = f"{resource_name(adjuster)}-scaling"
    scaling_meta = {
        "name": scaling,
        "namespace": src.value("nodeScaleAdjuster.scalingPodNamespace"),
        "labels": namespaced_meta(src, scaling, adjuster)["labels"],
    }
    only = when(adjuster)
    roles.append(
        _object(
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "Role",
                "metadata": scaling_meta,
                "rules": SCALING_RULES,
            },
            only,
        )
    )
    bindings.append(_object(_binding(src, "RoleBinding", dict(scaling_meta), "Role", scaling, account=adjuster), only))
    objects = [*accounts, *cluster_roles, *cluster_bindings, *roles, *bindings]
    for obj in objects:
        if obj.body["metadata"]["name"] == resource_name(OPERATOR):
            obj.when = OPERATOR_ONLY
    return objects


def _binding(
    src: Source, kind: str, meta: dict[str, Any], role_kind: str, role: str, account: str | None = None
) -> dict[str, Any]:
    sa = resource_name(account) if account else meta["name"]
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": src.value("namespace.name")}],
    }


def _reservation_account(src: Source) -> dict[str, Any]:
    namespace = src.value("binder.resourceReservationNamespace")
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": src.value("binder.resourceReservationServiceAccount"),
            "namespace": namespace,
            "labels": namespaced_meta(src, RESERVATION_POD_ROLE, "binder")["labels"],
        },
        "automountServiceAccountToken": True,
    }


def _reservation_binding(src: Source, meta: dict[str, Any]) -> dict[str, Any]:
    account = {
        "kind": "ServiceAccount",
        "name": src.value("binder.resourceReservationServiceAccount"),
        "namespace": src.value("binder.resourceReservationNamespace"),
    }
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RESERVATION_POD_ROLE},
        "subjects": [account],
    }


def _object(body: dict[str, Any], only: str | None = None) -> InstallObject:
    return InstallObject("rbac", body, when=only)
