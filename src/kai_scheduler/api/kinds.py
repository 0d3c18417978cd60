"""The kinds a cluster serves to this project: resource name, API version, Kind and scope of each.

A fact of the Kubernetes API, not of any store: the stores serve these kinds (`store.interface` re-exports
them) and scenario files default the namespace of a namespaced kind from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kai_scheduler.api import constants


@dataclass(frozen=True, slots=True)
class Resource:
    """A kind the store serves: its key, API version, Kind and scope.

    `plural` is the kind's key in `RESOURCES` and, up to its first dot, its resource name in API paths
    (`path_name`). Keys are unique: when a second served kind shares a resource name (MPIJob in two API
    versions, Knative's Service beside the core one), its key is qualified after a dot: the version
    ("mpijobs.v1") or the group ("services.serving.knative.dev").
    """

    plural: str
    api_version: str
    kind: str
    namespaced: bool

    @property
    def path_name(self) -> str:
        """The resource name in API paths ("mpijobs" for the key "mpijobs.v1")."""
        return self.plural.partition(".")[0]

    @property
    def builtin(self) -> bool:
        """Whether Kubernetes itself serves the kind (a custom resource's is served from its CRD, and some of the
        API server's checks differ: a status patch of one ignores `metadata`)."""
        return self.api_version.rpartition("/")[0] in _KUBERNETES_GROUPS


_KUBERNETES_GROUPS: Final = frozenset(
    (
        "",
        "apps",
        "batch",
        "policy",
        "admissionregistration.k8s.io",
        "coordination.k8s.io",
        "resource.k8s.io",
        "scheduling.k8s.io",
    )
)


RESOURCES: dict[str, Resource] = {
    r.plural: r
    for r in (
        Resource("nodes", "v1", "Node", False),
        Resource("namespaces", "v1", "Namespace", False),
        Resource("pods", "v1", "Pod", True),
        Resource("events", "v1", "Event", True),
        Resource("configmaps", "v1", "ConfigMap", True),
        Resource("priorityclasses", constants.PRIORITYCLASS_API_VERSION, "PriorityClass", False),
        Resource("podgroups", constants.PODGROUP_API_VERSION, "PodGroup", True),
        Resource("queues", constants.QUEUE_API_VERSION, "Queue", False),
        Resource("bindrequests", constants.BINDREQUEST_API_VERSION, "BindRequest", True),
        Resource("topologies", constants.TOPOLOGY_API_VERSION, "Topology", False),
        Resource("schedulingshards", constants.KAI_V1_API_VERSION, "SchedulingShard", False),
        Resource("configs", constants.KAI_V1_API_VERSION, "Config", False),
        Resource("services", "v1", "Service", True),  # the operator's (metrics and webhook Services)
        Resource("serviceaccounts", "v1", "ServiceAccount", True),  # the operator's (the components' accounts)
        Resource("leases", "coordination.k8s.io/v1", "Lease", True),
        # Dynamic Resource Allocation (Kubernetes 1.32).
        Resource("deviceclasses", "resource.k8s.io/v1beta1", "DeviceClass", False),
        Resource("resourceslices", "resource.k8s.io/v1beta1", "ResourceSlice", False),
        Resource("resourceclaims", "resource.k8s.io/v1beta1", "ResourceClaim", True),
        Resource("resourceclaimtemplates", "resource.k8s.io/v1beta1", "ResourceClaimTemplate", True),
        Resource("secrets", "v1", "Secret", True),
        Resource(
            "validatingwebhookconfigurations",
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            False,
        ),
        Resource(
            "mutatingwebhookconfigurations", "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", False
        ),
        # Workload owners, read unstructured by the podgrouper (BEHAVIOR.md §8.2); their CRDs need not be
        # installed unless used. MPIJob: "mpijobs" is the MPI Operator's v2beta1, "mpijobs.v1" Kubeflow's v1; Ray's
        # v1alpha1 (older KubeRay) beside its v1.
        Resource("jobs", "batch/v1", "Job", True),
        Resource("cronjobs", "batch/v1", "CronJob", True),
        Resource("deployments", "apps/v1", "Deployment", True),
        Resource("replicasets", "apps/v1", "ReplicaSet", True),
        Resource("statefulsets", "apps/v1", "StatefulSet", True),
        Resource("pytorchjobs", "kubeflow.org/v1", "PyTorchJob", True),
        Resource("tfjobs", "kubeflow.org/v1", "TFJob", True),
        Resource("xgboostjobs", "kubeflow.org/v1", "XGBoostJob", True),
        Resource("jaxjobs", "kubeflow.org/v1", "JAXJob", True),
        Resource("mpijobs", "kubeflow.org/v2beta1", "MPIJob", True),
        Resource("mpijobs.v1", "kubeflow.org/v1", "MPIJob", True),
        Resource("notebooks", "kubeflow.org/v1beta1", "Notebook", True),
        Resource("notebooks.v1", "kubeflow.org/v1", "Notebook", True),
        Resource("rayclusters", "ray.io/v1", "RayCluster", True),
        Resource("rayjobs", "ray.io/v1", "RayJob", True),
        Resource("rayservices", "ray.io/v1", "RayService", True),
        Resource("rayclusters.v1alpha1", "ray.io/v1alpha1", "RayCluster", True),
        Resource("rayjobs.v1alpha1", "ray.io/v1alpha1", "RayJob", True),
        Resource("rayservices.v1alpha1", "ray.io/v1alpha1", "RayService", True),
        Resource("jobsets", "jobset.x-k8s.io/v1alpha2", "JobSet", True),
        Resource("leaderworkersets", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", True),
        # Volcano's PodGroup, read by the podgrouper when it migrates Volcano workloads (its minMember and queue).
        Resource("podgroups.scheduling.volcano.sh", "scheduling.volcano.sh/v1beta1", "PodGroup", True),
        Resource("services.serving.knative.dev", "serving.knative.dev/v1", "Service", True),
        Resource("configurations", "serving.knative.dev/v1", "Configuration", True),
        Resource("revisions", "serving.knative.dev/v1", "Revision", True),
        Resource("workflows", "argoproj.io/v1alpha1", "Workflow", True),
        # Grove (NVIDIA's API for multi-node inference): the owner chain of its pods (PodClique [→
        # PodCliqueScalingGroup] → PodCliqueSet, or the older PodGangSet), and the PodGang its pods are grouped by.
        Resource("podcliquesets", "grove.io/v1alpha1", "PodCliqueSet", True),
        Resource("podgangsets", "grove.io/v1alpha1", "PodGangSet", True),
        Resource("podcliques", "grove.io/v1alpha1", "PodClique", True),
        Resource("podcliquescalinggroups", "grove.io/v1alpha1", "PodCliqueScalingGroup", True),
        Resource("podgangs", "scheduler.grove.io/v1alpha1", "PodGang", True),
    )
}
# A kind's first listed resource: what an object that names no apiVersion is taken to be.
KIND_TO_PLURAL: dict[str, str] = {}
for _res in RESOURCES.values():
    KIND_TO_PLURAL.setdefault(_res.kind, _res.plural)
GVK_TO_PLURAL = {(r.api_version, r.kind): r.plural for r in RESOURCES.values()}
