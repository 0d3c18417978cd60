"""The operator's inputs with one field bad: a SchedulingShard (checked as the webhook and the operator check it,
then rendered into its ConfigMap and Deployment) and the Config (rendered into the install's values and the
shared components): nothing but the one user error type escapes, and a shard or Config refused names itself.
The operator then sets `Reconciled=False` with the message (docs/operator.md); `test_reconciler.py` has that."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from kai_scheduler.admission.operator import parse_shard
from kai_scheduler.api import kaiconfig
from kai_scheduler.api.errors import ObjectError, UserError
from kai_scheduler.operator import render
from kai_scheduler.scheduler.scheduler import load_config
from tests.badobj import mutations as m

JSON = dict[str, Any]

SHARD: JSON = yaml.safe_load("""
apiVersion: kai.scheduler/v1
kind: SchedulingShard
metadata: {name: pool-a, generation: 3}
spec:
  partitionLabelValue: pool-a
  placementStrategy: {gpu: spread, cpu: binpack}
  queueDepthPerAction: {allocate: 25, reclaim: 8}
  minRuntime: {preemptMinRuntime: "10m", reclaimMinRuntime: "5m"}
  kValue: 1.0
  usageDBConfig: {clientType: prometheus, connectionString: "http://prometheus-operated:9090"}
  scenarioSearchBudgets: {maxJobSearchDuration: 1m}
  plugins: {proportion: {arguments: {kValue: "2.0"}}, reflectjoborder: {enabled: true}, topology: {priority: 2000}}
  actions: {stalegangeviction: {enabled: false}}
  args: {max-consolidation-preemptees: 8}
  goMemLimitRatio: 0.8
""")
CONFIG: JSON = yaml.safe_load("""
apiVersion: kai.scheduler/v1
kind: Config
metadata: {name: kai-config}
spec:
  global:
    schedulerName: kai-scheduler
    queueLabelKey: kai.scheduler/queue
    nodePoolLabelKey: kai.scheduler/node-pool
    image: {repository: registry.example.com/kai-scheduler, tag: "0.1.0", pullPolicy: IfNotPresent}
  scheduler: {replicas: 1, schedulePeriod: 1s, resources: {limits: {cpu: "2", memory: 2Gi}}}
  binder: {replicas: 2, maxConcurrentReconciles: 20}
  podGrouper: {replicas: 1}
  controllers: {replicas: 1}
  admission: {replicas: 2, gpuSharingEnabled: true}
""")
BASE = render.base_values("kai-scheduler", None)


def reconcile_shard(obj: JSON) -> None:
    """What the operator does with a shard: check it, then render it (a UserError either way is its message)."""
    try:
        shard = parse_shard(obj)
    except ObjectError as err:
        assert err.kind == "SchedulingShard" and err.name == "pool-a" and err.field, str(err)
        return
    try:
        render.shard_objects(BASE, shard, None)
    except UserError as err:
        assert "\n" not in str(err), str(err)


def reconcile_config(obj: JSON) -> None:
    try:
        config = kaiconfig.Config.from_dict(obj)
    except ObjectError as err:
        assert err.kind == "Config" and err.field, str(err)
        return
    try:
        render.shared_objects(render.with_config(BASE, config), None)
    except UserError as err:
        assert "\n" not in str(err), str(err)


def test_the_shard_and_config_are_valid() -> None:
    render.shard_objects(BASE, parse_shard(SHARD), None)
    render.shared_objects(render.with_config(BASE, kaiconfig.Config.from_dict(CONFIG)), None)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(m.mutations(SHARD)))
def test_a_shard_with_one_bad_field_is_refused_in_one_line_or_rendered(mutation: m.Mutation) -> None:
    reconcile_shard(m.apply(SHARD, mutation))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(m.mutations(CONFIG)))
def test_a_config_with_one_bad_field_is_refused_in_one_line_or_rendered(mutation: m.Mutation) -> None:
    reconcile_config(m.apply(CONFIG, mutation))


def test_a_config_count_past_int32_is_refused_naming_the_field() -> None:
    """Found by fuzzing: `binder.replicas: 1e30` (a YAML integer) was a TypeError out of the rendering."""
    bad = m.apply(CONFIG, m.Mutation(("spec", "binder", "replicas"), 10**30))
    with pytest.raises(ObjectError, match=r"^Config kai-config spec.binder.replicas: expected an integer of at most"):
        kaiconfig.Config.from_dict(bad)


SCHEDULER_CONFIG: JSON = yaml.safe_load("""
actions: "allocate, consolidation, reclaim, preempt, stalegangeviction"
tiers:
- plugins:
  - name: predicates
  - name: proportion
    arguments: {kValue: "1.5"}
  - name: priority
  - name: nodeplacement
    arguments: {gpu: binpack, cpu: spread}
  - name: minruntime
    arguments: {defaultPreemptMinRuntime: 10m, defaultReclaimMinRuntime: 5m}
  - name: topology
queueDepthPerAction: {allocate: 25}
usageDBConfig: {clientType: prometheus, connectionString: "http://p:9090", usageParams: {windowSize: 1h}}
scenarioSearchBudgets: {maxJobSearchDuration: 1m}
""")


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(m.mutations(SCHEDULER_CONFIG, m.BAD_VALUES + m.YAML_ONLY)))
def test_a_scheduler_config_with_one_bad_field_is_one_line_or_loaded(mutation: m.Mutation) -> None:
    """The scheduler's ConfigMap (`config.yaml`, also `kai schedule --config`): refused at load in one line
    (a reload keeps the running configuration, docs/components.md), never anything else."""
    try:
        load_config(m.apply(SCHEDULER_CONFIG, mutation))
    except UserError as err:
        assert "\n" not in str(err), str(err)
