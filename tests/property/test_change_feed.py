"""The incremental paths of a saturation cycle against what they replace (hypothesis).

- The scheduler cache's change log (`ObjectCache.mark` / `changed`): between any two marks it names every key
  whose object changed (or says it does not know), and gives each as the cache has it, over random creates,
  patches and deletes, watches that expire (relists) and a log that drops its older half.
- `queue_charge.PrefixSums`: sums kept per job prefix and redone from the first changed job equal `charge` over
  every job, bit for bit, over random inserts, removals and replacements anywhere in the queue.
- The binder's pod-watch indexes (`GroupUse.indices`, `grouped`) equal what listing the reservation namespace
  gives, over random reservation pods created, annotated, deleted gracefully and removed.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kai_scheduler.api import constants
from kai_scheduler.api.clock import ManualClock
from kai_scheduler.binder import reservation
from kai_scheduler.cluster import queue_charge
from kai_scheduler.store import cache as cache_module
from kai_scheduler.store.cache import ObjectCache
from kai_scheduler.store.informer import Informers
from kai_scheduler.store.interface import StoreError
from kai_scheduler.store.memory import MemoryStore
from tests import builders as b

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

op = st.tuples(st.sampled_from(["create", "patch", "delete", "sync", "mark"]), st.integers(0, 5))


@SETTINGS
@given(st.lists(op, min_size=1, max_size=40), st.integers(2, 30), st.booleans())
def test_the_change_log_names_every_changed_key(ops: list[tuple[str, int]], history: int, small_log: bool) -> None:
    with pytest.MonkeyPatch.context() as patch:
        if small_log:
            patch.setattr(cache_module, "LOG_FLOOR", 3)
        store = MemoryStore(ManualClock(b.NOW), history_size=history)
        cache = ObjectCache(store, ["pods"])
        cache.sync()
        marks: list[tuple[object, dict[str, Any]]] = [(cache.mark("pods"), _objects(cache))]
        known = 0
        for what, i in ops:
            name = f"p{i}"
            try:
                if what == "create":
                    store.create(b.pod(name))
                elif what == "patch":
                    store.patch("pods", name, b.NAMESPACE, {"metadata": {"labels": {"n": str(len(marks))}}})
                elif what == "delete":
                    store.delete("pods", name, b.NAMESPACE, grace_period_seconds=0)
            except StoreError:
                pass
            if what in ("sync", "mark"):
                cache.sync()
            if what == "mark":
                marks.append((cache.mark("pods"), _objects(cache)))
        cache.sync()
        until, now = cache.mark("pods"), _objects(cache)
        for since, then in marks:
            changed = cache.changed("pods", since, until)
            if changed is None:
                continue
            known += 1
            for key in then.keys() | now.keys():
                if then.get(key) is not now.get(key):
                    assert key in changed
            for key, obj in changed.items():
                assert obj is now.get(key)
        assert known or not marks
        store.create(b.pod("late"))
        cache.sync()  # the cache moved past `until`: what `changed` would say is not the caller's state
        assert cache.changed("pods", marks[-1][0], until) is None


def _objects(cache: ObjectCache) -> dict[str, Any]:
    return {pod.meta.key: pod for pod in cache.objects("pods")}


def _job(draw: st.DrawFn) -> queue_charge.Rows:
    vector = st.lists(st.floats(0, 1e9, allow_nan=False), min_size=3, max_size=3).map(np.array)
    held = draw(st.lists(vector, max_size=3))
    return held, held if draw(st.booleans()) else [], draw(st.lists(vector, max_size=2))


jobs_rows = st.composite(_job)


@SETTINGS
@given(
    st.lists(st.tuples(st.sampled_from(["insert", "remove", "replace"]), st.integers(0, 30), jobs_rows()), max_size=40)
)
def test_kept_sums_equal_a_sum_over_every_job(steps: list[tuple[str, int, queue_charge.Rows]]) -> None:
    sums, jobs = queue_charge.PrefixSums(), []
    for what, at, rows in steps:
        if what == "insert" or not jobs:
            i = at % (len(jobs) + 1)
            jobs.insert(i, rows)
        elif what == "remove":
            i = at % len(jobs)
            del jobs[i]
        else:
            i = at % len(jobs)
            jobs[i] = rows
        got, want = sums.update(i, jobs[i:]), queue_charge.charge(jobs)
        assert np.array_equal(got.allocated, want.allocated)
        assert np.array_equal(got.non_preemptible, want.non_preemptible)
        assert np.array_equal(got.pending, want.pending)


@SETTINGS
@given(st.lists(jobs_rows(), max_size=30), st.lists(st.floats(0, 1e12, allow_nan=False), min_size=3, max_size=3))
def test_sums_folded_in_floats_are_numpys_to_the_bit(jobs: list[queue_charge.Rows], first: list[float]) -> None:
    """The few rows of a cycle's changed jobs are summed in Python floats (`_folded`): the running sums after each
    job are `np.cumsum`'s over the same rows, bit for bit."""
    for part in range(3):
        rows = [row for job in jobs for row in job[part]]
        ends = list(itertools.accumulate(len(job[part]) for job in jobs))
        folded = queue_charge._folded(np.array(first), rows, ends)
        running = np.cumsum(np.vstack([np.array(first), *rows]), axis=0)[ends]
        assert np.array(folded).reshape(len(ends), 3).tobytes() == running.reshape(len(ends), 3).tobytes()


reservation_op = st.tuples(st.sampled_from(["create", "index", "terminate", "remove", "plain"]), st.integers(0, 4))


@SETTINGS
@given(st.lists(reservation_op, max_size=30))
def test_the_binders_pod_watch_indexes_equal_a_listing(ops: list[tuple[str, int]]) -> None:
    store = MemoryStore(ManualClock(b.NOW))
    ns = constants.RESERVATION_NAMESPACE
    use = reservation.GroupUse(store, ns, Informers(store))
    for what, i in ops:
        name = f"r{i}"
        try:
            if what == "create":
                labels = {
                    reservation.LABEL_APP: constants.RESERVATION_APP_LABEL_VALUE,
                    constants.LABEL_GPU_GROUP: f"g{i % 2}",
                }
                store.create(_pod(name, ns, f"n{i % 2}", labels))
            elif what == "plain":  # labelled with a group, not a reservation pod
                store.create(_pod(f"x{i}", ns, "n0", {constants.LABEL_GPU_GROUP: f"g{i % 2}"}))
            elif what == "index":
                store.patch("pods", name, ns, {"metadata": {"annotations": {reservation.ANNOTATION_GPU_INDEX: str(i)}}})
            elif what == "terminate":
                store.delete("pods", name, ns, grace_period_seconds=30)
            else:
                store.delete("pods", name, ns, grace_period_seconds=0)
        except StoreError:
            pass
        use.refresh()
        listed, _ = store.list("pods", ns)
        indices: dict[str, dict[str, str | None]] = {}
        grouped: dict[str, set[str]] = {}
        for pod in listed:
            meta, labels = pod["metadata"], pod["metadata"].get("labels") or {}
            if labels.get(reservation.LABEL_APP) == constants.RESERVATION_APP_LABEL_VALUE:
                on_node = indices.setdefault(pod["spec"]["nodeName"], {})
                on_node[meta["name"]] = (meta.get("annotations") or {}).get(reservation.ANNOTATION_GPU_INDEX)
            if constants.LABEL_GPU_GROUP in labels and not meta.get("deletionTimestamp"):
                grouped.setdefault(labels[constants.LABEL_GPU_GROUP], set()).add(meta["name"])
        assert use.indices == indices
        assert use.grouped == grouped


def _pod(name: str, namespace: str, node: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
        "status": {"phase": "Running"},
    }


label_op = st.tuples(
    st.sampled_from(["create", "relabel", "unlabel", "delete", "list"]), st.integers(0, 5), st.sampled_from("ab")
)


@SETTINGS
@given(st.lists(label_op, max_size=40))
def test_a_list_by_label_value_equals_a_filter_of_every_object(ops: list[tuple[str, int, str]]) -> None:
    """The memory store's value index (made on the first `key=value` list, kept after) finds what a filter of
    every object finds, over pods created, relabelled, unlabelled and deleted before and after that list."""
    store = MemoryStore(ManualClock(b.NOW))
    for what, i, value in ops:
        name = f"p{i}"
        try:
            if what == "create":
                store.create(b.pod(name, labels={"g": value, "other": "x"}))
            elif what == "relabel":
                store.patch("pods", name, b.NAMESPACE, {"metadata": {"labels": {"g": value}}})
            elif what == "unlabel":
                store.patch("pods", name, b.NAMESPACE, {"metadata": {"labels": {"g": None}}})
            elif what == "delete":
                store.delete("pods", name, b.NAMESPACE, grace_period_seconds=0)
        except StoreError:
            pass
        every, _ = store.list("pods")
        for wanted in "ab":
            listed, _ = store.list("pods", selector=f"g={wanted}")
            expected = [p for p in every if (p["metadata"].get("labels") or {}).get("g") == wanted]
            assert [p["metadata"]["name"] for p in listed] == [p["metadata"]["name"] for p in expected]
