"""`kai schedule FILE` in-process: exit codes, one-line user errors, `--check`, `--output`, `--cycles`.

A user error is one line on stderr naming the file, the object and the field, exit code 2, no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cli.invoke import run as _run
from tests.cli.invoke import write as _write

SCENARIO = """\
name: two pods on one node
nodes:
- {name: n, gpus: 8, cpu: "64", memory: 512Gi}
queues:
- name: a
  resources:
    gpu: {quota: 8, overQuotaWeight: 1, limit: -1}
    cpu: {quota: -1, overQuotaWeight: 1, limit: -1}
    memory: {quota: -1, overQuotaWeight: 1, limit: -1}
jobs:
- name: j
  queue: a
  replicas: 2
  template: {gpus: 1, cpu: "1", memory: 1Gi}
"""

EXPECT_BINDING = "expect:\n  jobs:\n    j: {status: Binding, node: n}\n"
EXPECT_WRONG = "expect:\n  jobs:\n    j: {status: Pending}\n  maxBinds: 1\n"


# --- user errors -----------------------------------------------------------------------------------------------

# (file text or None for a missing file, words the one line must contain); ids state the rule
SCENARIO_ERRORS = [
    pytest.param(None, ["no such file"], id="a missing file"),
    pytest.param("nodes: [\n  {name: n\n", ["invalid YAML"], id="bad YAML"),
    pytest.param(
        SCENARIO.replace("gpus: 8,", "gpus: eight,"), ["node n", "gpus", "'eight'"], id="a field of the wrong type"
    ),
    pytest.param(
        SCENARIO.replace('cpu: "1"', 'cpu: "-1"'), ["job j", "cpu", "negative quantity"], id="a negative quantity"
    ),
    pytest.param(
        SCENARIO.replace("- name: a\n", "- name: a\n  parent: org\n"),
        ["queue a", "parent", "'org'"],
        id="a queue whose parent does not exist",
    ),
    pytest.param(
        SCENARIO.replace("- name: a\n", "- {name: b, parent: a}\n- name: a\n  parent: b\n"),
        ["queue", "parent", "cycle"],
        id="a queue cycle",
    ),
    pytest.param(
        SCENARIO.replace("  queue: a\n", "  queue: nowhere\n"),
        ["job j", "queue", "'nowhere'"],
        id="a job naming a missing queue",
    ),
    pytest.param(
        SCENARIO.replace(
            '  replicas: 2\n  template: {gpus: 1, cpu: "1", memory: 1Gi}\n',
            "  tasks:\n  - {name: t, status: Running, node: ghost, gpus: 1}\n",
        ),
        ["job j", "node", "'ghost'"],
        id="a pod naming a missing node",
    ),
    pytest.param(
        SCENARIO.replace("  queue: a\n", "  queue: a\n  minMember: -1\n"),
        ["job j", "minMember"],
        id="a negative minMember",
    ),
]


def _assert_one_line_error(code: int, out: str, err: str, path: str, words: list[str]) -> None:
    assert code == 2
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line, got {lines}"
    assert lines[0].startswith("kai: ")
    assert path in lines[0], "the line names the file"
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize("text, words", SCENARIO_ERRORS)
def test_a_bad_scenario_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str | None, words: list[str]
) -> None:
    path = str(tmp_path / "missing.yaml") if text is None else _write(tmp_path, text)
    code, out, err = _run(capsys, "schedule", path)
    _assert_one_line_error(code, out, err, path, words)


NODE = """\
apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: "8", memory: 8Gi, pods: "110", nvidia.com/gpu: "8"}}
"""
QUEUE = """\
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: %s}
spec:
  parentQueue: "%s"
  resources:
    gpu: {quota: 0, overQuotaWeight: 1, limit: -1}
    cpu: {quota: 0, overQuotaWeight: 1, limit: -1}
    memory: {quota: 0, overQuotaWeight: 1, limit: -1}
"""
PODGROUP = """\
---
apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg, namespace: ns}
spec: {queue: %s, minMember: 1}
"""
POD = """\
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ns, annotations: {pod-group-name: pg}}
spec:
  schedulerName: kai-scheduler
  nodeName: "%s"
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
status: {phase: %s}
"""
GOOD_MANIFEST = NODE + QUEUE % ("a", "") + PODGROUP % "a" + POD % ("", "Pending")

MANIFEST_ERRORS = [
    pytest.param(
        GOOD_MANIFEST.replace('"8"}}', '"-8"}}'),
        ["Node n", "nvidia.com/gpu", "negative quantity"],
        id="a negative quantity",
    ),
    pytest.param(
        GOOD_MANIFEST.replace("minMember: 1", "minMember: one"),
        ["PodGroup ns/pg", "minMember"],
        id="a field of the wrong type",
    ),
    pytest.param(
        GOOD_MANIFEST.replace("phase: Pending", "phase: Waiting"), ["Pod ns/p", "status.phase"], id="an unknown status"
    ),
    pytest.param(
        NODE + QUEUE % ("a", "org") + PODGROUP % "a" + POD % ("", "Pending"),
        ["Queue a", "parentQueue", "'org'"],
        id="a queue whose parent does not exist",
    ),
    pytest.param(
        NODE + QUEUE % ("a", "b") + QUEUE % ("b", "a") + PODGROUP % "a" + POD % ("", "Pending"),
        ["Queue", "parentQueue", "cycle"],
        id="a queue cycle",
    ),
    pytest.param(
        NODE + QUEUE % ("a", "") + PODGROUP % "nowhere" + POD % ("", "Pending"),
        ["PodGroup ns/pg", "queue", "'nowhere'"],
        id="a job naming a missing queue",
    ),
    pytest.param(
        NODE + QUEUE % ("a", "") + PODGROUP % "a" + POD % ("ghost", "Running"),
        ["Pod ns/p", "nodeName", "'ghost'"],
        id="a pod naming a missing node",
    ),
]


@pytest.mark.parametrize("text, words", MANIFEST_ERRORS)
def test_a_bad_manifest_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, words: list[str]
) -> None:
    """The issue: "A scenario or manifest with …" the same problems is a one-line error, exit code 2."""
    path = _write(tmp_path, text, "manifest.yaml")
    code, out, err = _run(capsys, "schedule", path)
    _assert_one_line_error(code, out, err, path, words)


def test_a_good_manifest_schedules(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = _run(capsys, "schedule", _write(tmp_path, GOOD_MANIFEST, "manifest.yaml"), "-o", "json")
    assert code == 0, err
    assert json.loads(out)["tasks"]["ns/p"]["status"] == "Binding"


@pytest.mark.parametrize(
    "meta", ["labels: {kai.scheduler/queue: a}, annotations: null", "labels: null, annotations: {pod-group-name: pg}"]
)
def test_a_pod_whose_labels_or_annotations_are_null_is_bound(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, meta: str
) -> None:
    """`annotations: null` is valid YAML for no annotations (the API server reads it so); the embedded kubelet once
    read it as a map once the pod was bound, and the run stopped with an internal error."""
    pod = POD.replace("annotations: {pod-group-name: pg}}", meta + "}") % ("", "Pending")
    manifest = NODE + QUEUE % ("a", "") + PODGROUP % "a" + pod
    code, out, err = _run(capsys, "schedule", _write(tmp_path, manifest, "m.yaml"), "--cycles", "2", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["tasks"]["ns/p"]["status"] in ("Binding", "Bound", "Running"), out


def test_a_manifest_of_kinds_it_does_not_read_says_which_were_skipped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A Job (no Job controller runs in kai schedule) is skipped with one line on stderr, not silently."""
    job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {containers: []}}}\n"
    path = _write(tmp_path, GOOD_MANIFEST + "---\n" + job, "manifest.yaml")
    code, out, err = _run(capsys, "schedule", path, "-o", "json")
    assert code == 0
    assert json.loads(out)["tasks"]["ns/p"]["status"] == "Binding"
    assert err.splitlines() == [
        f"kai: {path}: skipped Job: no workload controller runs here to make their pods; read are PriorityClass, "
        "Namespace, Topology, Node, Queue, PodGroup, PodGang, Pod, BindRequest (e.g. `kubectl get "
        "nodes,queues,podgroups,pods -A -o yaml`)"
    ]
    _, _, err = _run(capsys, "schedule", _write(tmp_path, GOOD_MANIFEST, "good.yaml"), "-o", "json")
    assert err == ""  # only what was skipped is said


def _grove_manifest(gpus_per_decode_pod: int) -> str:
    """A Grove PodCliqueSet's PodGang (prefill: 2 pods, 1 needed; decode: 2 pods, both needed) and its four
    pods, labelled with it and owned by the set, on one 8-GPU node."""
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi", "pods": "110"}},
        },
        {
            "apiVersion": "scheduling.run.ai/v2",
            "kind": "Queue",
            "metadata": {"name": "team"},
            "spec": {"resources": {"gpu": {"quota": 8, "limit": -1, "overQuotaWeight": 1}}},
        },
        {
            "apiVersion": "scheduler.grove.io/v1alpha1",
            "kind": "PodGang",
            "metadata": {
                "name": "llm-0",
                "namespace": "ns",
                "uid": "gang-uid",
                "labels": {"kai.scheduler/queue": "team"},
            },
            "spec": {
                "podgroups": [
                    {
                        "name": clique,
                        "minReplicas": need,
                        "podReferences": [{"namespace": "ns", "name": f"llm-0-{clique}-{i}"} for i in range(2)],
                    }
                    for clique, need in (("prefill", 1), ("decode", 2))
                ]
            },
        },
    ]
    for clique, gpus in (("prefill", 1), ("decode", gpus_per_decode_pod)):
        for i in range(2):
            docs.append(
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "name": f"llm-0-{clique}-{i}",
                        "namespace": "ns",
                        "labels": {"grove.io/podgang": "llm-0"},
                        "ownerReferences": [
                            {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet", "name": "llm", "uid": "pcs-uid"}
                        ],
                    },
                    "spec": {
                        "schedulerName": "kai-scheduler",
                        "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
                    },
                }
            )
    return yaml.safe_dump_all(docs)


def test_a_manifest_with_a_grove_podgang_schedules_its_pods_as_one_gang(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The PodGang is read (no Grove operator runs here): the pods are one PodGroup with its minimum, placed whole."""
    code, out, err = _run(capsys, "schedule", _write(tmp_path, _grove_manifest(3), "grove.yaml"), "-o", "json")
    assert code == 0, err
    tasks = json.loads(out)["tasks"]
    assert {t["job"] for t in tasks.values()} == {"ns/pg-llm-0-gang-uid"}
    assert {name: t["status"] for name, t in tasks.items()} == {
        "ns/llm-0-prefill-0": "Binding",
        "ns/llm-0-prefill-1": "Binding",
        "ns/llm-0-decode-0": "Binding",
        "ns/llm-0-decode-1": "Binding",
    }
    # Decode pods of 4 GPUs: the gang's minimum (1 prefill + 2 decode pods, 9 GPUs) does not fit 8: nothing placed.
    code, out, err = _run(capsys, "schedule", _write(tmp_path, _grove_manifest(4), "big.yaml"), "-o", "json")
    assert code == 0, err
    assert {t["status"] for t in json.loads(out)["tasks"].values()} == {"Pending"}
    assert "PodGang" not in err  # read, not skipped


def test_zero_cycles_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO), "--cycles", "0")
    assert code == 2 and err.splitlines() == ["kai: --cycles: must be at least 1, got 0"]


def test_a_bad_config_file_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = _write(tmp_path, "actions: allocate, shuffle\n", "config.yaml")
    code, _, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO), "--config", config)
    assert code == 2 and len(err.splitlines()) == 1 and "unknown action 'shuffle'" in err


# --- --check ---------------------------------------------------------------------------------------------------


def test_check_passes_with_exit_0(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO + EXPECT_BINDING), "--check", "-o", "json")
    assert code == 0 and err == ""


def test_a_failing_check_is_exit_1_with_one_line_per_mismatch(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _write(tmp_path, SCENARIO + EXPECT_WRONG)
    code, _, err = _run(capsys, "schedule", path, "--check", "-o", "json")
    assert code == 1
    assert err.splitlines() == [
        f"{path}: job default/j task j-0: expected status Pending, got Binding",
        f"{path}: job default/j task j-1: expected status Pending, got Binding",
        f"{path}: cycle 1: 2 binds, expected at most 1",
    ]


def test_check_without_an_expect_block_is_a_user_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO), "--check", "-o", "json")
    assert code == 2 and len(err.splitlines()) == 1 and "expect" in err


# --- output --------------------------------------------------------------------------------------------------------


def _json(capsys: pytest.CaptureFixture[str], path: str, *argv: str) -> dict[str, Any]:
    code, out, err = _run(capsys, "schedule", path, "-o", "json", *argv)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_json_output_keys(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = _json(capsys, _write(tmp_path, SCENARIO))
    assert set(data) >= {
        "scenario",
        "tasks",
        "queues",
        "unplaced",
        "evictions",
        "nodes",
        "cycles",
        "binds",
        "evictionCount",
        "pipelines",
        "problems",
    }
    assert data["scenario"] == "two pods on one node"
    assert data["tasks"] == {
        f"default/j-{i}": {
            "name": f"j-{i}",
            "namespace": "default",
            "job": "default/j",
            "queue": "a",
            "before": "Pending",
            "status": "Binding",
            "node": "n",
        }
        for i in (0, 1)
    }
    queue = data["queues"]["a"]
    assert set(queue) >= {"parent", "deserved", "fairShare", "allocated", "requested", "limit"}
    assert all(
        set(queue[k]) == {"gpu", "cpu", "memory"} for k in ("deserved", "fairShare", "allocated", "requested", "limit")
    )
    assert queue["deserved"]["gpu"] == 8 and queue["allocated"]["gpu"] == 2
    assert data["binds"] == 2 and data["evictionCount"] == 0 and data["pipelines"] == 0
    assert [set(c) >= {"cycle", "binds", "evictions", "pipelines"} for c in data["cycles"]] == [True]
    assert data["unplaced"] == {} and data["problems"] == [] and data["evictions"] == []


def test_yaml_output_says_the_same_as_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, SCENARIO)
    as_json = _json(capsys, path)
    code, out, _ = _run(capsys, "schedule", path, "-o", "yaml")
    as_yaml = yaml.safe_load(out)
    for data in (as_json, as_yaml):
        for cycle in data["cycles"]:
            cycle.pop("seconds")
    assert code == 0 and as_yaml == as_json


def test_table_output_names_every_task(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = _run(capsys, "schedule", _write(tmp_path, SCENARIO))
    assert code == 0
    assert "j-0" in out and "j-1" in out and "Binding" in out


def test_unplaced_jobs_say_why_in_plain_words(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = SCENARIO.replace("replicas: 2\n  template: {gpus: 1,", "replicas: 2\n  template: {gpus: 6,")
    data = _json(capsys, _write(tmp_path, text))
    assert data["unplaced"]["default/j"][0] == (
        "Resources were found for 1 pod while 2 are required for gang scheduling: each pod needs 6 GPUs, 12 GPUs in all"
    )


def test_two_cycles_turn_binding_into_running(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = _json(capsys, _write(tmp_path, SCENARIO), "--cycles", "2")
    assert {name: (t["before"], t["status"], t["node"]) for name, t in data["tasks"].items()} == {
        "default/j-0": ("Pending", "Running", "n"),
        "default/j-1": ("Pending", "Running", "n"),
    }
    assert [c["binds"] for c in data["cycles"]] == [2, 0]


def test_the_same_file_gives_the_same_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, SCENARIO)
    first, second = _json(capsys, path), _json(capsys, path)
    for data in (first, second):
        for cycle in data["cycles"]:
            cycle.pop("seconds")
    assert first == second


def test_the_first_cycle_reuses_the_model_of_the_first_snapshot(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report keeps what it needs of the first snapshot, not the snapshot: the cycle's snapshot is then
    the kept model updated, not a second model built from nothing (a second copy of every job and task).
    The cycles' results let go of their snapshots before the final view (the report reads their decisions),
    so the view updates the model too: one build from nothing in all, the first snapshot's."""
    from kai_scheduler.cluster.snapshot import incremental

    fresh = [0]
    build = incremental.new_model

    def counted(*args: Any, **kwargs: Any) -> Any:
        fresh[0] += 1
        return build(*args, **kwargs)

    monkeypatch.setattr(incremental, "new_model", counted)
    code, out, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO), "-o", "json")
    assert code == 0, err
    assert {t["status"] for t in json.loads(out)["tasks"].values()} == {"Binding"}
    assert fresh[0] == 1


def test_the_collector_is_paused_while_loading_and_building(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading and building make objects that live to the end and hold no cycles: full collections over them
    were a fifth of a large run. The collector is back on afterwards."""
    import gc

    from kai_scheduler import scenario
    from kai_scheduler.sim.embedded import EmbeddedCluster

    seen: dict[str, bool] = {}
    load, settle = scenario.load, EmbeddedCluster.settle

    def loading(path: Any) -> Any:
        seen["load"] = gc.isenabled()
        return load(path)

    def settling(self: EmbeddedCluster) -> None:
        seen.setdefault("build", gc.isenabled())
        settle(self)

    monkeypatch.setattr(scenario, "load", loading)
    monkeypatch.setattr(EmbeddedCluster, "settle", settling)
    assert gc.isenabled()
    code, _, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO), "-o", "json")
    assert code == 0, err
    assert seen == {"load": False, "build": False}
    assert gc.isenabled()


def test_every_step_says_what_it_does_once_it_takes_long(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the notice threshold at 0, each step of a run is announced: writing 100,000 tasks takes seconds."""
    from kai_scheduler.cli import phases

    monkeypatch.setattr(phases, "NOTICE_AFTER", 0.0)
    code, _, err = _run(capsys, "schedule", _write(tmp_path, SCENARIO), "-o", "json")
    assert code == 0, err
    started = [line.removesuffix(" …") for line in err.splitlines() if line.endswith(" …")]
    assert [s.split(" (")[0].split(" /")[0] for s in started] == [
        "kai: loading",
        "kai: building the cluster",
        "kai: cycle 1 of 1",
        "kai: preparing the report",
        "kai: writing the result",
    ]


# --- the priority classes KAI ships, on a manifest ---------------------------------------------------------------

CLASSED_NODE_AND_QUEUE = """\
apiVersion: v1
kind: Node
metadata: {name: n}
status: {allocatable: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "1", pods: "110"}}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: a}
spec:
  resources:
    gpu: {quota: %d, overQuotaWeight: 1, limit: -1}
    cpu: {quota: -1, overQuotaWeight: 1, limit: -1}
    memory: {quota: -1, overQuotaWeight: 1, limit: -1}
"""
CLASSED_POD = """\
---
apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {kai.scheduler/queue: a}}
spec:
  schedulerName: kai-scheduler
  priorityClassName: %s
  nodeName: "%s"
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: "1"}}}]
status: {phase: %s}
"""


@pytest.mark.parametrize(
    "priority_class, new, old",
    [
        pytest.param("build", "Pipelined", "Releasing", id="build (100) preempts train (50) in its queue"),
        pytest.param("train", "Pending", "Running", id="train does not preempt train"),
    ],
)
def test_a_manifest_pod_gets_the_shipped_class_it_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, priority_class: str, new: str, old: str
) -> None:
    text = CLASSED_NODE_AND_QUEUE % 1 + CLASSED_POD % ("old", "train", "n", "Running")
    text += CLASSED_POD % ("new", priority_class, "", "Pending")
    data = _json(capsys, _write(tmp_path, text, "manifest.yaml"))
    assert (data["tasks"]["default/new"]["status"], data["tasks"]["default/old"]["status"]) == (new, old)


@pytest.mark.parametrize(
    "priority_class, status",
    [
        pytest.param("build", "Pending", id="build is non-preemptible: not over its queue's quota"),
        pytest.param("build-preemptible", "Binding", id="build-preemptible (75) may go over quota"),
    ],
)
def test_a_shipped_class_gives_kai_preemptibility_offline(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, priority_class: str, status: str
) -> None:
    text = CLASSED_NODE_AND_QUEUE % 0 + CLASSED_POD % ("p", priority_class, "", "Pending")
    data = _json(capsys, _write(tmp_path, text, "manifest.yaml"))
    assert data["tasks"]["default/p"]["status"] == status


def test_a_manifest_pod_naming_an_unknown_class_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, CLASSED_NODE_AND_QUEUE % 1 + CLASSED_POD % ("p", "gold", "", "Pending"), "manifest.yaml")
    code, out, err = _run(capsys, "schedule", path)
    _assert_one_line_error(code, out, err, path, ["Pod default/p", "spec.priorityClassName", "'gold'"])


NAMESPACE_SELECTOR_EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "affinity" / "namespace-selector.yaml"


def test_a_manifests_namespaces_are_what_a_namespace_selector_matches(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The manifest's Namespace objects carry the labels an affinity term's namespaceSelector matches: with them
    the api pod keeps off the cache pod's node; without them no namespace matches and binpack picks that node."""
    text = NAMESPACE_SELECTOR_EXAMPLE.read_text(encoding="utf-8")
    code, out, _ = _run(capsys, "schedule", str(NAMESPACE_SELECTOR_EXAMPLE), "-o", "json")
    assert code == 0
    api = json.loads(out)["tasks"]["team-api/api"]
    assert (api["status"], api["node"]) == ("Binding", "gpu-1")
    docs = [d for d in yaml.safe_load_all(text) if d["kind"] != "Namespace"]
    code, out, _ = _run(capsys, "schedule", _write(tmp_path, yaml.safe_dump_all(docs), "bare.yaml"), "-o", "json")
    assert code == 0
    api = json.loads(out)["tasks"]["team-api/api"]
    assert (api["status"], api["node"]) == ("Binding", "gpu-0")
