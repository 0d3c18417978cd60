"""Names KAI's users already write: API groups, labels, annotations, resources, shipped priority classes.

BEHAVIOR.md §1, §2 and §9.3. Manifests written for KAI work unchanged because these strings are KAI's.
"""

from __future__ import annotations

from typing import Final

# --- API groups and versions (§1) ---
SCHEDULING_GROUP: Final = "scheduling.run.ai"
QUEUE_API_VERSION: Final = "scheduling.run.ai/v2"
PODGROUP_API_VERSION: Final = "scheduling.run.ai/v2alpha2"
BINDREQUEST_API_VERSION: Final = "scheduling.run.ai/v1alpha2"
TOPOLOGY_API_VERSION: Final = "kai.scheduler/v1alpha1"
KAI_V1_API_VERSION: Final = "kai.scheduler/v1"  # SchedulingShard and Config (§1.5)
PRIORITYCLASS_API_VERSION: Final = "scheduling.k8s.io/v1"

# --- Scheduler identity and defaults (§9.3) ---
DEFAULT_SCHEDULER_NAME: Final = "kai-scheduler"
DEFAULT_QUEUE_LABEL_KEY: Final = "kai.scheduler/queue"
DEFAULT_NODE_POOL_LABEL_KEY: Final = "kai.scheduler/node-pool"
# The name KAI gives the unlabelled node pool (the shard with an empty partitionLabelValue) in what it writes, as
# `nodePool: default` in a PodGroup's UnschedulableOnNodePool condition.
DEFAULT_NODE_POOL_NAME: Final = "default"
DEFAULT_QUEUE_NAME: Final = "default-queue"
DEFAULT_PARENT_QUEUE_NAME: Final = "default-parent-queue"
DEFAULT_QUEUE_PRIORITY: Final = 100
DEFAULT_PODGROUP_PRIORITY: Final = 50
NON_PREEMPTIBLE_PRIORITY_THRESHOLD: Final = 100

# --- Pod and owner labels (§2) ---
LABEL_QUEUE: Final = DEFAULT_QUEUE_LABEL_KEY
LABEL_PROJECT: Final = "project"
LABEL_SUBGROUP_NAME: Final = "kai.scheduler/subgroup-name"
LABEL_PRIORITY_CLASS: Final = "priorityClassName"
LABEL_PREEMPTIBILITY: Final = "kai.scheduler/preemptibility"
LABEL_TASK_PRIORITY: Final = "kai.scheduler/task-priority"
LABEL_GPU_GROUP: Final = "runai-gpu-group"
LABEL_SELECTED_NODE: Final = "selected-node"
LABEL_KUBEFLOW_JOB_ROLE: Final = "training.kubeflow.org/job-role"
LABEL_KUBEFLOW_REPLICA_INDEX: Final = "training.kubeflow.org/replica-index"
LABEL_RAY_NODE_TYPE: Final = "ray.io/node-type"
LABEL_LWS_WORKER_INDEX: Final = "leaderworkerset.sigs.k8s.io/worker-index"
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"

# --- Labels and annotations that workload controllers write and the podgrouper reads (§7.3, §8.2) ---
LABEL_KUBEFLOW_REPLICA_TYPE: Final = "training.kubeflow.org/replica-type"
LABEL_KUBEFLOW_JOB_NAME: Final = "training.kubeflow.org/job-name"
LABEL_RAY_GROUP: Final = "ray.io/group"
LABEL_RAY_PRIORITY_CLASS: Final = "ray.io/priority-class-name"
LABEL_LWS_GROUP_INDEX: Final = "leaderworkerset.sigs.k8s.io/group-index"
LABEL_LWS_NAME: Final = "leaderworkerset.sigs.k8s.io/name"
LABEL_JOBSET_REPLICATED_JOB: Final = "jobset.sigs.k8s.io/replicatedjob-name"
LABEL_JOBSET_JOB_INDEX: Final = "jobset.sigs.k8s.io/job-index"
ANNOTATION_KNATIVE_MIN_SCALE: Final = "autoscaling.knative.dev/min-scale"
ANNOTATION_LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"

# --- Pod annotations (§2) ---
ANNOTATION_POD_GROUP_NAME: Final = "pod-group-name"
ANNOTATION_SKIP_PODGROUPER: Final = "kai.scheduler/skip-podgrouper"
ANNOTATION_GPU_FRACTION: Final = "gpu-fraction"
ANNOTATION_GPU_MEMORY: Final = "gpu-memory"
ANNOTATION_GPU_FRACTION_NUM_DEVICES: Final = "gpu-fraction-num-devices"
ANNOTATION_GPU_FRACTION_CONTAINER_NAME: Final = "gpu-fraction-container-name"
ANNOTATION_MPS: Final = "mps"
ANNOTATION_RECEIVED_RESOURCE_TYPE: Final = "received-resource-type"
ANNOTATION_TOPOLOGY: Final = "kai.scheduler/topology"
ANNOTATION_TOPOLOGY_REQUIRED: Final = "kai.scheduler/topology-required-placement"
ANNOTATION_TOPOLOGY_PREFERRED: Final = "kai.scheduler/topology-preferred-placement"
ANNOTATION_SEGMENT_SIZE: Final = "kai.scheduler/segment-size"
ANNOTATION_SEGMENT_TOPOLOGY_REQUIRED: Final = "kai.scheduler/segment-topology-required-placement"
ANNOTATION_SEGMENT_TOPOLOGY_PREFERRED: Final = "kai.scheduler/segment-topology-preferred-placement"
ANNOTATION_BATCH_MIN_MEMBER: Final = "kai.scheduler/batch-min-member"
ANNOTATION_PREEMPTION_DELAY: Final = "kai.scheduler/preemption-delay"
ANNOTATION_STALENESS_GRACE_PERIOD: Final = "kai.scheduler/staleness-grace-period"

# --- PodGroup annotations the scheduler reads and writes (§1.2), RFC 3339 timestamps ---
ANNOTATION_LAST_START_TIMESTAMP: Final = "kai.scheduler/last-start-timestamp"
ANNOTATION_LAST_EVICTION_TIMESTAMP: Final = "kai.scheduler/last-eviction-timestamp"
ANNOTATION_STALE_TIMESTAMP: Final = "kai.scheduler/stale-podgroup-timestamp"
ANNOTATION_TOP_OWNER_METADATA: Final = "kai.scheduler/top-owner-metadata"
# Embedded and simulated clusters only (scenario `terminatesAfter`): how long the pod's termination takes after
# its deletionTimestamp, a Go duration or "never" (stuck terminating).
ANNOTATION_FAKE_TERMINATES_AFTER: Final = "kai.scheduler/fake-terminates-after"

# --- Node labels (§2, §6) ---
LABEL_GPU_MEMORY: Final = "nvidia.com/gpu.memory"
LABEL_GPU_COUNT: Final = "nvidia.com/gpu.count"
LABEL_MIG_STRATEGY: Final = "nvidia.com/mig.strategy"
DEFAULT_NODE_GPU_MEMORY_MIB: Final = 100

# --- Resource names ---
RESOURCE_CPU: Final = "cpu"
RESOURCE_MEMORY: Final = "memory"
RESOURCE_GPU: Final = "nvidia.com/gpu"
RESOURCE_PODS: Final = "pods"

# --- Preemptibility (§1.2) ---
PREEMPTIBLE: Final = "preemptible"
NON_PREEMPTIBLE: Final = "non-preemptible"

# --- GPU sharing (§6) ---
RESERVATION_NAMESPACE: Final = "kai-resource-reservation"
RESERVATION_APP_LABEL_VALUE: Final = "kai-resource-reservation"
# The ServiceAccount of the reservation pods: the reservation image patches its own pod with its GPU index.
RESERVATION_SERVICE_ACCOUNT: Final = "kai-resource-reservation"
# The RuntimeClass the admission webhook gives fractional-GPU pods; the NVIDIA GPU operator installs it.
DEFAULT_RUNTIME_CLASS_NAME: Final = "nvidia"
# The RuntimeClass of the binder's GPU reservation pods: none, the node's default runtime (KAI's default since its
# admission gives `nvidia` to fractional pods only).
DEFAULT_RESERVATION_RUNTIME_CLASS_NAME: Final = ""

# --- PodGroup scheduling condition types and reasons (§1.2) ---
CONDITION_UNSCHEDULABLE_ON_NODE_POOL: Final = "UnschedulableOnNodePool"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
DEFAULT_PODGROUP_ERROR: Final = "Unable to schedule podgroup"  # KAI's condition message head for several reasons
REASON_NON_PREEMPTIBLE_OVER_QUOTA: Final = "NonPreemptibleOverQuota"
REASON_OVER_LIMIT: Final = "OverLimit"
REASON_PREEMPTION_DELAY_NOT_ELAPSED: Final = "PreemptionDelayNotElapsed"
REASON_QUEUE_DOES_NOT_EXIST: Final = "QueueDoesNotExist"
REASON_NAMESPACE_NOT_ALLOWED: Final = "NamespaceNotAllowedInQueue"  # queue access control (not KAI's)
REASON_POD_SCHEDULING_ERRORS: Final = "PodSchedulingErrors"

# --- Names of priority classes shipped by the chart (§2; the table with values is `priorityclass.SHIPPED`) ---
PRIORITY_CLASS_TRAIN: Final = "train"
PRIORITY_CLASS_BUILD_PREEMPTIBLE: Final = "build-preemptible"
PRIORITY_CLASS_BUILD: Final = "build"
PRIORITY_CLASS_INFERENCE: Final = "inference"
