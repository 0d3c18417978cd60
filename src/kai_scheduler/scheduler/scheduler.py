"""The scheduler component: one cycle = snapshot → session → actions → commit (KAI `scheduler.go`, §3.1).

It works over any ClusterStore (the API server or the embedded cluster) through an ObjectCache, and reads time
only from the Clock it is given. A bad object never stops a cycle: it is left out of the snapshot and reported
with an event on that object, once per version.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Callable, Mapping

import numpy as np

from kai_scheduler.actions.common import budget
from kai_scheduler.actions.registry import ACTIONS
from kai_scheduler.api import constants
from kai_scheduler.api.clock import Clock
from kai_scheduler.api.pod import Pod
from kai_scheduler.cluster import snapshot as snapshots
from kai_scheduler.cluster.dra import DraObjects
from kai_scheduler.cluster.resources import QUEUE_AXIS, Vector
from kai_scheduler.cluster.snapshot.pools import in_pool
from kai_scheduler.framework import config as configs
from kai_scheduler.framework.points import Reject
from kai_scheduler.framework.session import Session
from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins import registry
from kai_scheduler.scheduler import job_order as reflected
from kai_scheduler.scheduler.commit import Committer
from kai_scheduler.scheduler.result import CycleResult
from kai_scheduler.store import collector
from kai_scheduler.store.cache import SCHEDULER_RESOURCES, ObjectCache
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import JSON, ClusterStore
from kai_scheduler.usagedb import factory as usage_factory
from kai_scheduler.usagedb import usage_config
from kai_scheduler.usagedb.interface import UsageSource, UsageVector

log = logging.getLogger(__name__)

OWN_WRITES_WAIT = 5.0  # seconds a cycle waits for the previous cycles' BindRequests to show in its cache


def load_config(raw: Mapping[str, object] | None) -> configs.SchedulerConfig:
    """Parse a ConfigMap-shaped configuration against the plugins and actions this scheduler has.

    Every plugin is built once here, so a bad argument fails at load and not in the first cycle."""
    config = configs.parse(
        raw,
        known_plugins=set(registry.BUILDERS),
        known_actions=set(ACTIONS),
        kai_plugins=set(registry.KAI_PLUGINS),
    )
    for plugin in config.plugins():
        try:
            registry.build(plugin.name, plugin.arguments)
        except configs.ConfigError as err:
            raise err.at(*configs.plugin_path(raw, plugin.name), "arguments") from None
    try:
        budget.SearchBudgets.parse(config.scenario_search_budgets)
    except configs.ConfigError as err:
        raise err.at("scenarioSearchBudgets") from None
    try:
        usage_config.parse(config.usage_db_config)
    except usage_config.UsageConfigError as err:
        raise configs.ConfigError(str(err), ("usageDBConfig",)) from None
    return config


class Scheduler:
    def __init__(
        self,
        store: ClusterStore,
        config: configs.SchedulerConfig,
        clock: Clock,
        usage: UsageSource | None = None,
        *,
        writers: int = 1,
        whole_cluster: bool = False,
        informers: Informers | None = None,
    ) -> None:
        """`whole_cluster`: the cache keeps every node pool's objects (a reader that looks across pools, as
        `kai explain`); a scheduling cycle still sees only its pool (the snapshot filters too). `informers`: the
        process's shared informers its cache reads through (a private set when none is given)."""
        self.store = store
        self.config = config
        self.clock = clock
        self.usage = usage  # time-based fair share (§5.5): None = off
        self._usage_fetched_at: float | None = None  # the usage fetch the last cycle read (a new one is timed)
        self.cache = ObjectCache(
            store,
            SCHEDULER_RESOURCES,
            keep=None if whole_cluster else pool_filters(config.flags),
            remember_dropped=("queues",),  # other pools' queues: named when a job of this pool names one
            informers=informers,
        )
        # A cache that keeps only this pool's objects needs no second filter in each snapshot (one pass over
        # every PodGroup a cycle, most of a small cycle's cost on a large cluster).
        self._filter_pool = whole_cluster
        flags = config.flags
        self.committer = Committer(
            store,
            node_pool=flags.partition_label_value,
            node_pool_label_key=flags.nodepool_label_key,
            update_eviction_condition=flags.update_pod_eviction_condition,
            nominate=flags.pipelined_claims,
            writers=writers,
            clock=clock,
        )
        self.actions = [ACTIONS[name]() for name in config.actions]
        if config.ignored_plugins:
            log.info(
                "configuration names plugins this scheduler does not run",
                extra={"plugins": list(config.ignored_plugins)},
            )
        self._reported: set[tuple[str, str, str]] = set()
        self._unseen: list[str] = []  # BindRequests this scheduler wrote that its cache has not seen yet
        self._earlier_builds = snapshots.Memo()  # what unchanged objects yielded in earlier snapshots
        # Held while the cache changes (a sync, an own write taken in) and while another thread copies its
        # references (`held`, for /get-snapshot): that thread sees the cache between two syncs, as a cycle does.
        self.cache_lock = threading.Lock()
        self.synced = False  # whether a cycle has synced the cache (a standby's cache is empty)
        # The `reflectjoborder` plugin's order as the last session opened (None: no cycle has run with it).
        self.job_order: reflected.JobOrder | None = None

    def reconfigure(self, config: configs.SchedulerConfig) -> None:
        """Run the next cycles with `config` (actions, plugins and their arguments, depths, budgets); its flags
        and usageDBConfig must be the current ones (they shape the cache, the committer and the usage source)."""
        if config.flags != self.config.flags or config.usage_db_config != self.config.usage_db_config:
            raise ValueError("reconfigure: flags and usageDBConfig cannot change in place")
        self.config = config
        self.actions = [ACTIONS[name]() for name in config.actions]

    def snapshot(self, *, all_pools: bool = False) -> snapshots.Snapshot:
        """The cycle's snapshot of this scheduler's pool; `all_pools` (with `whole_cluster`): every pool at once,
        a view of a sharded cluster, not one to schedule on."""
        self._sync()
        self._await_own_bind_requests()
        params = self.snapshot_params()
        if all_pools:
            params = dataclasses.replace(params, all_pools=True)
        return snapshots.build(self.cluster_objects(), params, self._earlier_builds)

    def _sync(self) -> None:
        with self.cache_lock:
            self.cache.sync()
            self.synced = True

    def held(self) -> dict[str, list[tuple[str, object]]] | None:
        """Every resource's (key, object) pairs in the cache as the last sync left it, or None before the first
        sync. Only references are copied under the lock: a sync waits no longer than that."""
        with self.cache_lock:
            if not self.synced:
                return None
            return {resource: self.cache.held(resource) for resource in self.cache.resources}

    def cluster_objects(self) -> snapshots.ClusterObjects:
        """The cache's typed objects as they are (no sync), with the objects that failed to parse as problems."""
        return snapshots.ClusterObjects(
            nodes=self.cache.objects("nodes"),
            pods=self.cache.objects("pods"),
            podgroups=self.cache.objects("podgroups"),
            queues=self.cache.objects("queues"),
            bind_requests=self.cache.objects("bindrequests"),
            priority_classes=self.cache.objects("priorityclasses"),
            topologies=self.cache.objects("topologies"),
            dra=DraObjects(
                classes=self.cache.objects("deviceclasses"),
                slices=self.cache.objects("resourceslices"),
                claims=self.cache.objects("resourceclaims"),
                templates=self.cache.objects("resourceclaimtemplates"),
            ),
            namespaces=self.cache.objects("namespaces"),
            other_pool_queues={
                name: labels.get(self.config.flags.nodepool_label_key, "")
                for name, labels in self.cache.dropped("queues").items()
            },
            feed=self.cache,
            marks={resource: self.cache.mark(resource) for resource in snapshots.FED_RESOURCES},
            problems=[
                snapshots.Problem(
                    b.kind,
                    b.key,
                    "InvalidObject",
                    b.message,
                    b.annotations.get(constants.ANNOTATION_POD_GROUP_NAME, ""),
                )
                for b in self.cache.bad_objects()
            ],
        )

    def snapshot_params(self) -> snapshots.SnapshotParams:
        """What a snapshot takes from the scheduler's flags and clock: its node pool, scheduler name, now."""
        flags = self.config.flags
        return snapshots.SnapshotParams(
            now=self.clock.now(),
            scheduler_name=flags.scheduler_name,
            node_pool_label_key=flags.nodepool_label_key,
            partition_label_value=flags.partition_label_value,
            stuck_in_releasing_seconds=flags.stuck_in_releasing_threshold,
            queue_access_control=flags.queue_access_control,
            pool_objects=self._filter_pool,
        )

    def _take_in_own_bind_requests(self, created: list[JSON]) -> None:
        """The BindRequests this cycle wrote go into the cache as the server answered them, as KAI's scheduler
        adds them to its informer store: the next cycle sees their GPUs taken without waiting for the watch."""
        self._unseen = []
        for obj in created:
            with self.cache_lock:
                self.cache.assume("bindrequests", obj)
            meta = obj.get("metadata", {})
            self._unseen.append(f"{meta.get('namespace', '')}/{meta.get('name', '')}")

    def _relist_bind_requests(self) -> None:
        """The next cycle lists the BindRequests again before its snapshot. A create whose answer was lost (the API
        server killed mid-request, a connection cut) may have been made: its GPUs are taken, yet the watch may
        bring it late or, while it reconnects after an outage, not at all until it relists; a cycle without it
        would give those GPUs to other pods, and the binder would bind both. Until that list succeeds (the server
        answers) no cycle runs."""
        log.info("BindRequests listed again before the next cycle: a create failed, yet the server may hold it")
        with self.cache_lock:
            self.cache.relist("bindrequests")

    def _await_own_bind_requests(self) -> None:
        """Hold the snapshot until the BindRequests of earlier cycles are back through the watch.

        Against an API server a write reaches the cache a few milliseconds later, or more under load; a cycle
        that started sooner would see their nodes' GPUs free and place other pods there. Bounded: after
        OWN_WRITES_WAIT seconds the cycle goes on (and the BindRequest is taken as lost, as when the write
        failed)."""
        unseen = [key for key in self._unseen if not self.cache.seen("bindrequests", key)]
        deadline = time.monotonic() + OWN_WRITES_WAIT
        while unseen and time.monotonic() < deadline:
            time.sleep(0.005)
            self._sync()
            unseen = [key for key in unseen if not self.cache.seen("bindrequests", key)]
        if unseen:
            log.warning(
                "own BindRequests not seen back from the API server; scheduling without them",
                extra={"count": len(unseen), "first": unseen[0]},
            )
        self._unseen = []

    def run_once(self) -> CycleResult:
        # A cycle builds a few objects per pod and PodGroup that all live until it ends; with the collector on,
        # those bursts set off full collections over every cached object (a third of an idle cycle on 20,000
        # pods). Cycles the snapshot makes (subgroup trees) are collected once it is back on.
        # Then the cycle's own garbage, all young, is collected at once: the carried snapshot model is reused
        # only once nothing holds the last snapshot, and the session's reference cycles (plugins, job orders)
        # would otherwise hold it until some later collection.
        with collector.paused():
            if not self.synced:
                self._sync()  # the start-up lists, taken in before the cycle makes anything
                collector.loaded()
            result = self._cycle()
        gc.collect(0)
        return result

    def _cycle(self) -> CycleResult:
        started = time.perf_counter()
        snap = self.snapshot()
        queried: list[float] = []
        if self.usage is not None:
            usage = self.usage.usage(snap.now)
            snap.queue_usage = {q: np.array(v) for q, v in usage.by_queue.items()}
            if usage.fetched_at != self._usage_fetched_at and usage.query_seconds is not None:
                queried.append(usage.query_seconds)
            self._usage_fetched_at = usage.fetched_at
        plugins = [registry.build(p.name, p.arguments) for p in self.config.plugins()]
        ssn = Session(snap, self.config, plugins)
        t_open = time.perf_counter()
        plugin_open = ssn.open()
        if reflected.enabled(self.config):
            self.job_order = reflected.reflect(ssn)
        open_seconds = time.perf_counter() - t_open
        timings: dict[str, float] = {}
        ends: dict[str, int] = {}
        for action in self.actions:
            t0 = time.perf_counter()
            action.execute(ssn)
            timings[action.name] = time.perf_counter() - t0
            ends[action.name] = len(ssn.committed)
        t_close = time.perf_counter()
        plugin_close = ssn.close()
        close_seconds = time.perf_counter() - t_close
        self.committer.errors = []
        self.committer.created_bind_requests = []
        self.committer.bind_requests_unsure = False
        self.committer.bind_seconds = []
        self._commit(ssn)
        self._take_in_own_bind_requests(self.committer.created_bind_requests)
        if self.committer.bind_requests_unsure:
            self._relist_bind_requests()
        shares = _shares(ssn)
        if self.usage is not None:
            capacity = snap.total_capacity()[list(QUEUE_AXIS)]
            self.usage.observe(snap.now, {q: _triple(s.allocated) for q, s in shares.items()}, _triple(capacity))
        result = CycleResult(
            now=snap.now,
            held=snap,
            operations=list(ssn.committed),
            fit_errors=dict(ssn.job_fit_errors),
            queue_shares=shares,
            problems=list(snap.problems),
            action_seconds=timings,
            seconds=time.perf_counter() - started,
            write_errors=list(self.committer.errors),
            open_session_seconds=open_seconds,
            close_session_seconds=close_seconds,
            action_ends=ends,
            plugin_seconds={"OnSessionOpen": plugin_open, "OnSessionClose": plugin_close},
            bind_seconds=list(self.committer.bind_seconds),
            usage_query_seconds=queried,
            search=ssn.search,
        )
        ssn.release()
        return result

    def _commit(self, ssn: Session) -> None:
        snap, now, c = ssn.snapshot, ssn.now, self.committer
        for br in snap.stale_bind_requests:
            c.delete_bind_request(br.meta.namespace, br.meta.name)
        c.apply(
            ssn.committed,
            snap.jobs,
            now,
            claims=snap.dra_state().allocations if snap.dra_objects.claims else None,
            pending=snap.waiting,
            stale=snap.stale_candidates(),
            started=sorted(ssn.started_jobs),
            fit_errors=ssn.job_fit_errors,
        )
        placed = {op.task.job_uid for op in ssn.committed}
        # Only these jobs get a condition written or cleared; in `jobs` order, as a pass over every job would.
        told = [snap.jobs[uid] for uid in {*snap.job_problems, *ssn.job_fit_errors, *placed} if uid in snap.jobs]
        for job in sorted(told, key=lambda j: (j.namespace, j.name)):
            uid = job.uid
            reasons = list(snap.job_problems.get(uid, [])) if uid in snap.job_problems else None
            if reasons is not None:
                c.unschedulable(job, [Reject("snapshot", p.reason, p.message) for p in reasons], now)
            elif uid in ssn.job_fit_errors and job.has_pending():
                c.unschedulable(job, ssn.job_fit_errors[uid], now)
            elif uid in placed:
                c.schedulable(job)
        for problem in snap.problems:
            marker = (problem.kind, problem.key, problem.message)
            if marker not in self._reported:
                self._reported.add(marker)
                log.warning(
                    "bad object skipped", extra={"kind": problem.kind, "object": problem.key, "reason": problem.message}
                )
                c.problem(problem.kind, problem.key, problem.reason, problem.message)
        self._tell_pods_of_refused_podgroups(snap.problems)

    def _tell_pods_of_refused_podgroups(self, problems: list[snapshots.Problem]) -> None:
        """The pending pods of ours that name a PodGroup the scheduler refused are no job's tasks: without this
        only the PodGroup would say why they wait, and `kubectl describe pod` is where a user looks first."""
        refused = {p.key: p.message for p in problems if p.kind == "PodGroup" and p.reason == "InvalidObject"}
        if not refused:
            return
        waiting: dict[str, list[Pod]] = {}
        name = self.config.flags.scheduler_name
        for pod in self.cache.objects("pods"):
            group = pod.meta.annotations.get(constants.ANNOTATION_POD_GROUP_NAME)
            key = f"{pod.namespace}/{group}"
            if group and key in refused and pod.scheduler_name == name and pod.phase == "Pending" and not pod.node_name:
                waiting.setdefault(key, []).append(pod)
        for key, pods in sorted(waiting.items()):
            group = key.rpartition("/")[2]
            self.committer.refused_podgroup(pods, f"podgroup {group!r} is invalid: {refused[key]}")


def usage_source(config: configs.SchedulerConfig, clock: Clock, *, offline: bool) -> UsageSource | None:
    """The usage source `usageDBConfig` asks for (None when time-based fair share is off); offline (`kai
    schedule`, the simulator) always the embedded recorder, fed by this scheduler's cycles."""
    settings = usage_config.parse(config.usage_db_config)
    return None if settings is None else usage_factory.build(settings, clock, offline=offline)


def _triple(vector: Vector) -> UsageVector:
    return float(vector[0]), float(vector[1]), float(vector[2])


def _shares(ssn: Session) -> dict[str, QueueShare]:
    shares = {}
    for name in ssn.snapshot.queues:
        share = ssn.queue_share(name)
        if share is not None:
            shares[name] = share
    return shares


POOLED_RESOURCES = ("nodes", "queues", "podgroups", "bindrequests")


def pool_filters(flags: configs.Flags) -> dict[str, Callable[[JSON], bool]]:
    """What the cache keeps of the kinds that carry the node-pool label (§1.5): this scheduler's pool only, so
    another pool's objects cost no parsing or snapshot work here (pods are kept: they join their PodGroups)."""
    key, value = flags.nodepool_label_key, flags.partition_label_value

    def keep(obj: JSON) -> bool:
        labels = (obj.get("metadata") or {}).get("labels")
        return in_pool(labels if isinstance(labels, dict) else {}, key, value)

    return dict.fromkeys(POOLED_RESOURCES, keep)
