"""bench/bench_request_cost.py: the requests it measures are the components' own, and its floor arithmetic."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_request_cost", BENCH / "bench_request_cost.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_request_cost"] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def recorded(bench: ModuleType) -> tuple[dict[str, dict[str, object]], str]:
    return bench.recorded_templates()  # type: ignore[no-any-return]


def test_every_write_of_a_pods_way_is_recorded_from_the_components(
    bench: ModuleType, recorded: tuple[dict[str, dict[str, object]], str]
) -> None:
    templates, uid = recorded
    assert set(templates) == {k.key for k in bench.KINDS} - {"pod-create"}
    assert templates["pg-create"]["kind"] == "PodGroup"
    assert templates["br-create"]["kind"] == "BindRequest"
    assert templates["event"]["reason"] == "Scheduled"
    assert templates["pod-annotate"] == {
        "metadata": {"annotations": {"pod-group-name": templates["pg-create"]["metadata"]["name"]}}
    }  # type: ignore[index]
    assert "kai.scheduler/last-start-timestamp" in templates["pg-start"]["metadata"]["annotations"]  # type: ignore[index]
    assert templates["br-status"]["status"]["phase"] == "Succeeded"  # type: ignore[index]
    assert "resourcesStatus" in templates["pg-status"]["status"]  # type: ignore[operator]
    assert templates["pod-running"]["status"]["phase"] == "Running"  # type: ignore[index]
    assert uid


def test_a_template_gets_each_pods_name_uid_and_node(
    bench: ModuleType, recorded: tuple[dict[str, dict[str, object]], str]
) -> None:
    templates, uid = recorded
    body = bench.fill_in(templates["br-create"], "new-uid", uid, "rc0-7", "bench-node-7")
    assert body["metadata"]["name"] == "rc0-7"
    assert body["metadata"]["ownerReferences"][0]["uid"] == "new-uid"
    assert body["spec"] == {**templates["br-create"]["spec"], "podName": "rc0-7", "selectedNode": "bench-node-7"}  # type: ignore[dict-item]
    pg = bench.fill_in(templates["pg-create"], "new-uid", uid, "rc0-7", "bench-node-7")
    assert uid not in str(pg) and "fill-0" not in str(pg)


def test_the_floor_is_the_requests_per_pod_times_their_cost(bench: ModuleType) -> None:
    one_ms = {k.key: bench.Measure(requests=1000, apiserver=0.8, etcd=0.2, client=0.5) for k in bench.KINDS}
    rows = dict((what, (kai, kube)) for what, kai, kube in bench.floors({"as-sent": [one_ms]}, 2, 3.0, 200.0))
    # 9.2-9.5 requests of 1 ms (KAI's 8.2-8.5 and the fake kubelet's Running) against kube-scheduler's 3 and
    # that one; 2,000 CPU-ms a second over (that + 3 + 0.5) ms.
    assert rows["API server + etcd CPU per pod"] == ("9.20–9.50 ms", "4.00 ms")
    most = next(v for k, v in rows.items() if k.startswith("most pods/s"))
    assert most == (f"{2000 / 13.0:.0f}–{2000 / 12.7:.0f}", f"{2000 / 7.5:.0f}")
