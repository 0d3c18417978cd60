"""The install values: the chart's `values.yaml` (the defaults, documented) and user overrides on top of it.

`VALUES_YAML` is the single source of the defaults: the chart ships it verbatim and `kai manifests` parses it.
Overrides (`-f values.yaml`, `--set a.b=c`) may only name keys it has and must keep each value's type, so a typo
is an error naming the key instead of a silently ignored setting.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import Any, Final

import yaml

from kai_scheduler.api.errors import UserError
from kai_scheduler.install import kai_values

Values = dict[str, Any]


def _version() -> str:
    try:
        return metadata.version("kai-scheduler")
    except metadata.PackageNotFoundError:  # running from a source tree that was never installed
        return "0.0.0"


VERSION = _version()

VALUES_YAML = f"""\
# Default values of the kai-scheduler chart. `kai manifests` reads the same file: `--set a.b=c` and `-f FILE`
# override it there exactly as `helm install --set` / `-f` do here. Every component flag has a value below.
# KAI's own values (its chart's values.yaml) are accepted too: docs/install.md says what each becomes here.

namespace:
  # Namespace the components, their RBAC and the scheduler configuration live in.
  name: kai-scheduler
  # Create the namespace (turn off when it is created elsewhere, e.g. `helm install --create-namespace`).
  create: true

image:
  # One image runs every component (`kai <component>`); build it with the repository's Dockerfile.
  repository: kai-scheduler
  tag: "{VERSION}"
  pullPolicy: IfNotPresent

global:
  # --scheduler-name: pods with this spec.schedulerName are scheduled, grouped and admitted.
  schedulerName: kai-scheduler
  # --queue-label-key: label naming a workload's queue.
  queueLabelKey: kai.scheduler/queue
  # --nodepool-label-key: label that assigns nodes, queues and podgroups to a scheduler shard.
  nodePoolLabelKey: kai.scheduler/node-pool
  # --queue-access-control (scheduler and admission; not KAI's): a queue's spec.allowedNamespaces and
  # spec.allowedNamespaceSelector decide which namespaces may submit to it.
  queueAccessControl: false
  # --qps / --burst: client-side rate limit of every component towards the API server.
  qps: 50
  burst: 300
  # --log-format (a global `kai` flag): text (message and key=value fields) or json (one object a line).
  logFormat: text
  # --gpu-sharing-enabled (admission): admit pods asking for a GPU fraction (gpu-fraction / gpu-memory
  # annotations). Off by default, as KAI's: such a pod is then refused at creation.
  gpuSharing: false
  # --leader-elect on every component and the operator even with one replica (it is on anyway above one).
  leaderElection: false
  # KAI's selective monitoring: label → value maps (`--set global.podLabelSelector.app=batch`). Only the pods
  # carrying all of podLabelSelector's labels, in namespaces carrying all of namespaceLabelSelector's, are grouped
  # (the pod grouper's --pod-label-selector / --namespace-label-selector) and seen by the pod webhooks (their
  # objectSelector / namespaceSelector). Empty: every pod of the scheduler.
  podLabelSelector: {{}}
  namespaceLabelSelector: {{}}
  # Where the components' pods run, as KAI's global values: every component's Deployment (and the operator's)
  # gets them, e.g. tolerations of the system nodes' taint, or imagePullSecrets ([{{name: regcred}}]) for a private
  # registry. Lists are set in a values file (-f); empty: not written.
  nodeSelector: {{}}
  tolerations: []
  affinity: {{}}
  imagePullSecrets: []
  priorityClassName: ""

leaderElection:
  # --leader-elect is turned on for a component whose replicas is above 1 (or with global.leaderElection); the
  # lease lives in `namespace.name`.
  # --leader-elect-lease-duration / --leader-elect-renew-deadline / --leader-elect-retry-period
  leaseDuration: 15s
  renewDeadline: 10s
  retryPeriod: 2s

scheduler:
  replicas: 1
  # --schedule-period: time between scheduling cycles.
  schedulePeriod: 1s
  # --partition-label-value: the node pool this scheduler serves ("" = objects without the node-pool label).
  partitionLabelValue: ""
  # --restrict-node-scheduling: only schedule onto nodes labelled as CPU/GPU workers.
  restrictNodeScheduling: false
  # --max-consolidation-preemptees: most pods one consolidation may move.
  maxConsolidationPreemptees: 16
  # --detailed-fit-errors: per-node reasons in unschedulable messages.
  detailedFitErrors: false
  # --update-pod-eviction-condition: set a DisruptionTarget condition on pods before evicting them.
  updatePodEvictionCondition: false
  # --use-scheduling-signatures: skip equivalent jobs already found unschedulable in a cycle.
  useSchedulingSignatures: true
  # --full-hierarchy-fairness: compare fairness across the whole queue tree.
  fullHierarchyFairness: true
  # --allow-consolidating-reclaim: reclaim may move pods instead of evicting them.
  allowConsolidatingReclaim: true
  # --default-staleness-grace-period: how long a gang below its minimum may run before it is evicted.
  defaultStalenessGracePeriod: 60s
  # --stuck-in-releasing-threshold: after this long a releasing pod no longer counts as freeing resources.
  stuckInReleasingThreshold: 2m
  # --metrics-namespace: prefix of the scheduler's Prometheus metrics.
  metricsNamespace: kai
  # --dashboard-address: serve the read-only web dashboard on this address, such as ":8090" ("" = off);
  # reach it with `kubectl port-forward -n kai-scheduler deploy/kai-scheduler 8090` (static install; with the operator,
  # the SchedulingShard's spec.args.dashboard-address sets it, on deploy/kai-scheduler-default).
  dashboardAddress: ""
  # --plugin-server-port: GET /get-snapshot (the snapshot plugin) answers the scheduler's snapshot.zip here, on
  # every interface (0 = off): `kubectl port-forward -n kai-scheduler deploy/kai-scheduler 8081`, then
  # `curl -o snapshot.zip localhost:8081/get-snapshot` and `kai schedule snapshot.zip` (docs/components.md).
  pluginServerPort: 8081
  resources:
    requests:
      cpu: 250m
      memory: 512Mi
    limits:
      cpu: 700m
      memory: 512Mi
  # The scheduler configuration in KAI's ConfigMap format (actions, tiers, plugin arguments,
  # queueDepthPerAction, usageDBConfig, scenarioSearchBudgets); mounted and passed as --scheduler-conf.
  config: |
    actions: "allocate, consolidation, reclaim, preempt, stalegangeviction"
    tiers:
    - plugins:
      - name: predicates
      - name: proportion
      - name: priority
      - name: elastic
      - name: kubeflow
      - name: ray
      - name: nodeavailability
      - name: gpusharingorder
      - name: gpupack
      - name: resourcetype
      - name: podaffinity
      - name: subgrouporder
      - name: taskorder
      - name: nominatednode
      - name: nodeplacement
        arguments:
          gpu: binpack
          cpu: binpack
      - name: minruntime
      - name: topology
  # The operator install's SchedulingShard `default` (KAI's values; scheduler.config above is the static install's,
  # the other scheduler values above reach the operator install through the Config where it has a field,
  # docs/install.md). placementStrategy (binpack or spread) is its spec.placementStrategy for gpu and cpu; args
  # (KAI's scheduler flags by name: {{leader-elect: "true", v: "4"}}, docs/operator.md), plugins, actions and
  # scenarioSearchBudgets are copied into its spec as given.
  placementStrategy: binpack
  args: {{}}
  plugins: {{}}
  actions: {{}}
  scenarioSearchBudgets: {{}}

binder:
  replicas: 1
  # --reconcile-period: time between passes over pending BindRequests.
  reconcilePeriod: 0.2s
  # --max-concurrent-reconciles: BindRequests bound in parallel.
  maxConcurrentReconciles: 10
  # --resource-reservation-namespace: namespace of the GPU reservation pods (created by the install).
  resourceReservationNamespace: kai-resource-reservation
  # --resource-reservation-service-account: the reservation pods' ServiceAccount, made in their namespace with a
  # Role to read and patch their own pod (the reservation image reports its GPU index on it).
  resourceReservationServiceAccount: kai-resource-reservation
  # --resource-reservation-pod-resources: CPU and memory requests and limits of the reservation pods' container
  # (KAI's value), e.g. {{requests: {{cpu: 10m, memory: 32Mi}}}}; its GPU is the binder's.
  resourceReservationPodResources: {{}}
  # --resource-reservation-pod-security-context / -container-security-context: the reservation pods' pod and
  # container securityContext, e.g. for a namespace that enforces the restricted Pod Security Standard.
  resourceReservationPodSecurityContext: {{}}
  resourceReservationContainerSecurityContext: {{}}
  # --resource-reservation-pod-image: image of the GPU reservation pods (reports the GPU index it was given).
  resourceReservationPodImage: ghcr.io/nvidia/kai-scheduler/resource-reservation:latest
  # --resource-reservation-allocation-timeout: how long a reservation pod may take to report its GPU index.
  resourceReservationAllocationTimeout: 40s
  # --runtime-class-name: RuntimeClass of the GPU reservation pods ("" = none, the node's default runtime: KAI's
  # default); set nvidia where the GPUs are reached only through the NVIDIA GPU operator's runtime class.
  runtimeClassName: ""
  # KAI's binder plugins: only hamicore is a setting here (the others are always on, in KAI's order).
  plugins:
    hamicore:
      # --hami-core-enabled (binder and admission): HAMi-core GPU memory isolation of fractional pods. The webhook
      # gives the fraction container CUDA_DEVICE_MEMORY_LIMIT from its shared-GPU ConfigMap and the binder writes
      # its GPU memory there (MiB, "4147m"); HAMi-core (kai-resource-isolator) enforces it. Needs global.gpuSharing.
      enabled: false
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      cpu: 500m
      memory: 512Mi

podgrouper:
  replicas: 1
  # --reconcile-period: time between passes over new and changed pods.
  reconcilePeriod: 0.5s
  # --knative-gang-schedule: the pods of a Knative Revision as one gang (minMember its
  # autoscaling.knative.dev/min-scale) instead of one PodGroup per pod.
  knativeGangSchedule: true
  # --max-concurrent-reconciles: PodGroup and pod writes sent at once (KAI's flag; its default is 10, here 20:
  # each pod is two round trips one after the other, and the grouper is the first stage).
  maxConcurrentReconciles: 20
  # --default-priorities-configmap-name and -namespace: a ConfigMap whose data.types (a JSON list of
  # {{typeName, group, priorityName, preemptibility}}) sets the default priority class and preemptibility
  # per workload kind; "" for none.
  defaultPrioritiesConfigMapName: ""
  defaultPrioritiesConfigMapNamespace: ""
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      cpu: 500m
      memory: 512Mi

controllers:
  replicas: 1
  # --reconcile-period: time between PodGroup and Queue status updates.
  reconcilePeriod: 0.5s
  # --max-concurrent-reconciles: PodGroup and Queue status writes sent in parallel.
  maxConcurrentReconciles: 10
  resources:
    requests:
      cpu: 100m
      memory: 256Mi
    limits:
      cpu: 500m
      memory: 512Mi

admission:
  replicas: 1
  # --webhook-addr: HTTPS port of the webhooks (the kai-admission Service forwards 443 to it).
  webhookPort: 9443
  # --secret-name: Secret holding the webhook certificate; the admission component creates and rotates it.
  secretName: kai-admission-cert
  # --block-nvidia-visible-devices: set NVIDIA_VISIBLE_DEVICES=void on containers that asked for no GPU.
  blockNvidiaVisibleDevices: false
  # --gpu-fraction-runtime-class-name: runtimeClassName given to fractional-GPU pods that have none.
  runtimeClassName: nvidia
  # failurePolicy of the pod webhooks (Ignore: pods are still admitted while the webhook is down).
  podFailurePolicy: Ignore
  # failurePolicy of the Queue, PodGroup and Topology webhooks.
  crdFailurePolicy: Fail
  # Send only pods of `global.schedulerName` to the pod webhooks (matchConditions: Kubernetes 1.28 and later).
  # Turn off on older clusters: every pod then reaches the webhook, which admits foreign pods unchanged.
  matchConditions: true
  resources:
    requests:
      cpu: 50m
      memory: 128Mi
    limits:
      cpu: 500m
      memory: 256Mi

operator:
  # Install `kai operator` (the default, as KAI's install): it renders the scheduler of each SchedulingShard
  # (ConfigMap, Deployment, metrics Service) and the binder, podgrouper, controllers and admission from the Config
  # `kai-config`, with the same builders as this chart. This chart renders that Config and the SchedulingShard
  # `default` from these values into the ConfigMap kai-config-manifest, and the operator applies them
  # (createDefaults). The component Deployments, Services and the scheduler ConfigMap are then left out of the
  # install (RBAC, webhooks and priority classes stay). false: the static install, those objects rendered here from
  # these values and no operator (`kai manifests --static` sets it).
  enabled: true
  replicas: 1
  # --reconcile-period: time between passes over the Config and the SchedulingShards.
  reconcilePeriod: 1s
  # --create-defaults: apply the Config kai-config and the SchedulingShard default rendered from these values (the
  # ConfigMap kai-config-manifest): created when missing at start, updated when the install's rendering changes.
  createDefaults: true
  resources:
    requests:
      cpu: 50m
      memory: 128Mi
    limits:
      cpu: 500m
      memory: 256Mi

nodeScaleAdjuster:
  # Install the node-scale-adjuster: whole-GPU "scaling pods" for unschedulable fractional-GPU pods, so that a
  # cluster autoscaler sees their demand (docs/node-scale-adjuster.md). Off by default: it helps only with one.
  enabled: false
  replicas: 1
  # --reconcile-period: longest time between passes (a pod change starts one sooner).
  reconcilePeriod: 1s
  # --scale-adjust-namespace: namespace of the scaling pods (created by the install when enabled).
  scalingPodNamespace: kai-scale-adjust
  # --scaling-pod-image: image of the scaling pods' container (it never needs to run for long).
  scalingPodImage: registry.k8s.io/pause:3.10
  # --gpu-memory-to-fraction-ratio: GPU portion a gpu-memory pod counts for (a number in (0, 1]).
  gpuMemoryToFractionRatio: "0.1"
  # --cool-down-seconds: after a node took a scaling pod, its pods get this long to be placed first.
  coolDownSeconds: 60
  resources:
    requests:
      cpu: 50m
      memory: 128Mi
    limits:
      cpu: 500m
      memory: 256Mi

defaultShard:
  # The operator install: the operator applies the SchedulingShard `default` from the scheduler values above (KAI's
  # value; false: no default shard from the install).
  enabled: true

prometheus:
  # The Config's spec.prometheus (KAI's values): with enabled, a shard's prometheus usage database without a
  # connection string reads from the Service usage-prometheus, or from externalPrometheusUrl (docs/operator.md).
  enabled: false
  externalPrometheusUrl: ""

defaultQueues:
  # The controllers component creates default-parent-queue and its child default-queue when they are missing at
  # its start (retrying until the Queue CRD and the admission webhook allow it); it never changes them after.
  create: true

priorityClasses:
  # Create the priority classes train (50), build-preemptible (75), build (100) and inference (125).
  create: true

serviceMonitor:
  # A Prometheus Operator ServiceMonitor scraping every component's /metrics (needs the operator's CRDs).
  enabled: false
  interval: 30s
"""


class ValuesError(UserError):
    """Values that cannot be installed; the message names the key."""


def defaults() -> Values:
    loaded = yaml.safe_load(VALUES_YAML)
    assert isinstance(loaded, dict)
    return loaded


def resolve(
    files: Iterable[str] = (),
    sets: Iterable[str] = (),
    *,
    namespace: str | None = None,
    image: str | None = None,
    ignored: list[str] | None = None,
) -> Values:
    """Defaults, then each values file, then each `--set`, then the `--namespace` and `--image` shortcuts.

    KAI's values are taken as `kai_values` says; each one that changes nothing here is appended to `ignored` as
    "key: why" (when given)."""
    values = defaults()
    notes: list[str] = [] if ignored is None else ignored
    for path in files:
        merge(values, _read(path), source=path, ignored=notes)
    for assignment in sets:
        apply_set(values, assignment, ignored=notes)
    if namespace is not None:
        merge(values, {"namespace": {"name": namespace}}, source="--namespace")
    if image is not None:
        repository, tag = split_image(image)
        merge(values, {"image": {"repository": repository, "tag": tag}}, source="--image")
    return values


def _read(path: str) -> Mapping[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            loaded = yaml.safe_load(f)
    except OSError as err:
        raise ValuesError(f"values file {path}: {err.strerror or err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ValuesError(f"values file {path}{where}: not valid YAML") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, Mapping):
        raise ValuesError(f"values file {path}: expected a mapping of values, got {type(loaded).__name__}")
    return loaded


# Free-form mappings (KAI's values for the default SchedulingShard): any keys, taken as given and merged as Helm
# merges values (a null removes a key).
FREE_FORM: Final = frozenset(
    {
        "scheduler.args",
        "scheduler.plugins",
        "scheduler.actions",
        "scheduler.scenarioSearchBudgets",
        "global.podLabelSelector",
        "global.namespaceLabelSelector",
        "global.nodeSelector",
        "global.affinity",
        "binder.resourceReservationPodResources",
        "binder.resourceReservationPodSecurityContext",
        "binder.resourceReservationContainerSecurityContext",
    }
)
# Free-form mappings of label keys to label values (checked by `model.check`).
LABEL_MAPS: Final = ("global.podLabelSelector", "global.namespaceLabelSelector")
# Free-form mappings whose values are text wherever they are written (a map of strings in the object).
STRING_MAPS: Final = (*LABEL_MAPS, "global.nodeSelector")


def _merge_free(node: dict[str, Any], override: Mapping[str, Any]) -> None:
    for key, new in override.items():
        if new is None:
            node.pop(key, None)
        elif isinstance(new, Mapping) and isinstance(node.get(key), dict):
            _merge_free(node[key], new)
        else:
            node[key] = copy.deepcopy(dict(new) if isinstance(new, Mapping) else new)


def merge(
    values: Values,
    override: Mapping[str, Any],
    *,
    source: str,
    prefix: str = "",
    ignored: list[str] | None = None,
    base: Values | None = None,
    root: Values | None = None,
) -> None:
    """Merge `override` into `values` in place; only known keys (this install's or KAI's), each keeping its
    default's type. A null puts the value back to its default, as Helm's does."""
    base = defaults() if base is None else base
    root = values if root is None else root
    for key, new in override.items():
        path = f"{prefix}{key}"
        if key not in values:
            _kai(root, path, new, source=source, ignored=ignored)
            continue
        old = values[key]
        if new is None:
            values[key] = copy.deepcopy(lookup_default(base, path))
        elif path in FREE_FORM:
            if not isinstance(new, Mapping):
                raise ValuesError(f"{source}: value {path!r} must be a mapping, got {new!r}")
            _merge_free(old, new)
        elif isinstance(old, dict):
            if not isinstance(new, Mapping):
                raise ValuesError(f"{source}: value {path!r} must be a mapping, got {new!r}")
            merge(old, new, source=source, prefix=f"{path}.", ignored=ignored, base=base, root=root)
        elif isinstance(old, list):  # replaced whole, as Helm replaces a list
            if not isinstance(new, list):
                raise ValuesError(f"{source}: value {path!r} must be a list, got {new!r}")
            values[key] = copy.deepcopy(new)
        else:
            values[key] = coerce(path, old, _empty_is_default(path, new, base), source=source)


def _kai(values: Values, path: str, new: Any, *, source: str, ignored: list[str] | None) -> None:
    """A key this install does not have: KAI's (an alias or an ignored value), or an error naming it."""
    found = kai_values.find(path)
    if found is None and isinstance(new, Mapping) and new:  # a section KAI has and this install does not
        for key, inner in new.items():
            _kai(values, f"{path}.{key}", inner, source=source, ignored=ignored)
        return
    if found is None:
        raise ValuesError(f"{source}: unknown value {path!r}")
    key, rule = found
    if isinstance(rule, kai_values.Ignored):
        if ignored is not None and _is_set(new):
            ignored.append(f"{path}: KAI's value has no effect here: {rule.reason}")
        return
    value = rule.convert(new) if rule.convert is not None else new
    target = rule.target + _INDEX.sub("", path)[len(key) :]  # a key under a mapping alias keeps its tail
    *parents, last = target.split(".")
    merge(values, _nested([*parents, last], value), source=f"{source} ({path})", ignored=ignored)


def _nested(keys: list[str], value: Any) -> dict[str, Any]:
    out: Any = value
    for key in reversed(keys):
        out = {key: out}
    return dict(out)


def _is_set(value: Any) -> bool:
    """Whether a value says anything: an empty map or list (KAI's defaults of optional settings) does not."""
    return value is not None and value != {} and value != []


def lookup_default(base: Values, path: str) -> Any:
    node: Any = base
    for key in path.split("."):
        node = node[key]
    return node


# Values KAI leaves empty to mean "the default" (its Config then defaults them).
_EMPTY_MEANS_DEFAULT = frozenset({"global.nodePoolLabelKey"})


def _empty_is_default(path: str, new: Any, base: Values) -> Any:
    return lookup_default(base, path) if new == "" and path in _EMPTY_MEANS_DEFAULT else new


def coerce(path: str, default: Any, new: Any, *, source: str) -> Any:
    """`new` as the type of `default` (a YAML scalar); a mismatch is a ValuesError naming `path`."""
    where = f"{source}: value {path!r}"
    if isinstance(default, bool):
        if isinstance(new, bool):
            return new
        raise ValuesError(f"{where} must be true or false, got {new!r}")
    if isinstance(default, int):
        if isinstance(new, int) and not isinstance(new, bool):
            return new
        raise ValuesError(f"{where} must be an integer, got {new!r}")
    if isinstance(default, str):
        if isinstance(new, str):
            return new
        if isinstance(new, int | float) and not isinstance(new, bool):
            return str(new)  # `tag: 1.2` in a values file means the string
        raise ValuesError(f"{where} must be a string, got {new!r}")
    raise ValuesError(f"{where} cannot be set")


_INDEX = re.compile(r"\[\d+\]")


def apply_set(values: Values, assignment: str, *, ignored: list[str] | None = None) -> None:
    """`a.b=c`: the key must exist (here or in KAI's values); `c` is read as the type of the value it replaces,
    and `null` puts it back to its default, as with Helm."""
    path, sep, raw = assignment.partition("=")
    if not sep or not path:
        raise ValuesError(f"--set {assignment!r}: expected KEY=VALUE")
    keys = [key.replace("\\.", ".") for key in re.split(r"(?<!\\)\.", path)]  # Helm's `\.`: a dot in a key
    node: Any = values
    for i, key in enumerate(keys):
        if ".".join(keys[:i]) in FREE_FORM:
            _merge_free(node, _nested(keys[i:], None if raw == "null" else _scalar(raw)))
            return
        if not isinstance(node, dict) or key not in node:
            if kai_values.find(path) is not None:
                _kai(values, path, _scalar(raw), source="--set", ignored=ignored)
                return
            raise ValuesError(f"--set {path}: unknown value {'.'.join(keys[: i + 1])!r}")
        if i < len(keys) - 1:
            node = node[key]
    old = node[keys[-1]]
    if isinstance(old, dict):
        raise ValuesError(f"--set {path}: {path!r} is a mapping; set one of its keys")
    if isinstance(old, list) and raw != "null":
        raise ValuesError(f"--set {path}: {path!r} is a list; set it in a values file (-f)")
    if raw == "null":
        node[keys[-1]] = copy.deepcopy(lookup_default(defaults(), path))
        return
    parsed: Any = raw if isinstance(old, str) else _scalar(raw)
    node[keys[-1]] = coerce(path, old, _empty_is_default(path, parsed, defaults()), source="--set")


def _scalar(raw: str) -> Any:
    """A `--set` value as Helm reads it: true/false, numbers and null typed, anything else a string."""
    try:
        return yaml.safe_load(raw) if raw else raw
    except yaml.YAMLError:
        return raw


def split_image(image: str) -> tuple[str, str]:
    """ "repo/name:tag" → ("repo/name", "tag"); a colon in a registry's host:port is not a tag."""
    repository, sep, tag = image.rpartition(":")
    if not sep or "/" in tag or not repository or not tag:
        raise ValuesError(f"--image {image!r}: expected REPOSITORY:TAG")
    return repository, tag
