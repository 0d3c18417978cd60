"""Every bad scenario or manifest is one ObjectError line naming the file:line, the entry and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from kai_scheduler.api import ObjectError
from kai_scheduler.scenario import ScenarioError, load, loads

# Lines: 1 nodes, 2 node n, 3 queues, 4 root, 5 team-a, 6 jobs, 7 job j, 8 queue, 9 tasks, 10 its task
CLUSTER = """nodes:
- {name: n, gpus: 8, gpuMemory: 40000}
queues:
- {name: root}
- {name: team-a, parent: root}
jobs:
"""


def job(task: str = "{}", **fields: str) -> str:
    """Job j in team-a (queue on line 8, further fields from line 9) with one task, after them."""
    head = "".join(f"  {key}: {value}\n" for key, value in {"queue": "team-a", **fields}.items())
    return CLUSTER + "- name: j\n" + head + "  tasks:\n" + f"  - {task}\n"


# (file text, the one line it must fail with); ids state the rule
REJECTS = [
    pytest.param(
        job("{gpus: two}"),
        "bad.yaml:10: job j tasks[0].gpus: expected a number, got 'two'",
        id="a field of the wrong type names the field and the value",
    ),
    pytest.param(
        job("{name: 5}"),
        "bad.yaml:10: job j tasks[0].name: expected a string, got 5",
        id="a string field given a number",
    ),
    pytest.param(
        job("{gpu: 1}"),
        "bad.yaml:10: job j tasks[0].gpu: unknown field (did you mean gpus?); known fields: annotations, "
        "claims, cpu, draGpus, gpuDevices, gpuGroups, gpuMemory, gpus, labels, memory, mig, name, node, nodeAffinity, "
        "nodeSelector, podAffinity, podAntiAffinity, preferredNodeAffinity, preferredPodAffinity, "
        "preferredPodAntiAffinity, status, subGroup, taskPriority, terminatesAfter, tolerations",
        id="an unknown task field suggests the close one and lists the known",
    ),
    pytest.param(
        "nodez: []\nnodes: []\n",
        "bad.yaml:1: scenario top-level nodez: unknown field (did you mean nodes?); known fields: autoscaler, "
        "config, cycles, deviceClasses, devicePools, expect, jobs, name, namespaces, nodes, now, priorityClasses, "
        "queues, resourceClaims, shards, topologies",
        id="an unknown top-level field",
    ),
    pytest.param(
        "nodes:\n- {name: n, gpu: 1}\n",
        "bad.yaml:2: node n gpu: unknown field (did you mean gpus?); known fields: count, cpu, draDevices, "
        "draGpus, gpuMemory, gpus, labels, memory, mig, migStrategy, name, pods, ready, taints, unschedulable",
        id="an unknown node field",
    ),
    pytest.param(
        job("{status: Runing, node: n}"),
        "bad.yaml:10: job j tasks[0].status: unknown status 'Runing'; want one of Pending, Running, "
        "Releasing, StuckInReleasing, Pipelined, Binding, Bound, Succeeded, Failed, Gated",
        id="an unknown status lists the valid ones",
    ),
    pytest.param(
        job("{cpu: '-1'}"),
        "bad.yaml:10: job j tasks[0].cpu: negative quantity '-1'",
        id="a negative cpu quantity",
    ),
    pytest.param(
        job("{memory: lots}"),
        "bad.yaml:10: job j tasks[0].memory: expected a Kubernetes quantity, got 'lots'",
        id="a memory that is not a quantity",
    ),
    pytest.param(
        job("{memory: 16GB}"),
        "bad.yaml:10: job j tasks[0].memory: expected a Kubernetes quantity, got '16GB' (did you mean 16Gi or 16G?)",
        id="a memory in GB is given the Kubernetes spelling",
    ),
    pytest.param(
        job("{gpus: -1}"),
        "bad.yaml:10: job j tasks[0].gpus: must be at least 0, got -1",
        id="negative gpus",
    ),
    pytest.param(
        job("{gpus: 1.5}"),
        "bad.yaml:10: job j tasks[0].gpus: whole GPUs must be a whole number (a fraction is below 1), got 1.5",
        id="gpus of 1 or more must be whole",
    ),
    pytest.param(
        job("{gpus: 1, gpuMemory: 100}"),
        "bad.yaml:10: job j tasks[0].gpuMemory: gpuMemory and gpus are mutually exclusive",
        id="gpuMemory excludes gpus",
    ),
    pytest.param(
        job("{gpus: 1, gpuDevices: 2}"),
        "bad.yaml:10: job j tasks[0].gpuDevices: gpuDevices needs a fraction: gpus below 1, or gpuMemory",
        id="gpuDevices needs a fraction",
    ),
    pytest.param(
        "nodes:\n- {name: n, cpu: '-2'}\n",
        "bad.yaml:2: node n cpu: negative quantity '-2'",
        id="a negative node quantity",
    ),
    pytest.param(
        "queues:\n- name: q\n  resources:\n    gpu: {quota: -2}\n",
        "bad.yaml:4: queue q resources.gpu.quota: negative quantity -2; want at least 0 (or -1 for unlimited)",
        id="a negative queue quota other than -1",
    ),
    pytest.param(
        "queues:\n- name: q\n  resources:\n    gpus: {quota: 1}\n",
        "bad.yaml:4: queue q resources.gpus: unknown field (did you mean gpu?); known fields: cpu, gpu, memory",
        id="an unknown queue resource",
    ),
    pytest.param(
        "queues:\n- {name: a, parent: b}\n",
        "bad.yaml:2: queue a parent: no queue named 'b'; queues: a",
        id="a queue whose parent does not exist",
    ),
    pytest.param(
        "queues:\n- {name: a, parent: c}\n- {name: b, parent: a}\n- {name: c, parent: b}\n",
        "bad.yaml:2: queue a parent: queue cycle a -> c -> b -> a",
        id="a queue cycle",
    ),
    pytest.param(
        "queues:\n- {name: a}\n- {name: a}\n",
        "bad.yaml:3: queue a name: duplicate queue name 'a'",
        id="a queue declared twice",
    ),
    pytest.param(
        job(queue="nope"),
        "bad.yaml:8: job j queue: no queue named 'nope'; queues: root, team-a",
        id="a job naming a missing queue",
    ),
    pytest.param(
        job(queue="root"),
        "bad.yaml:8: job j queue: queue 'root' is not a leaf (children: team-a); jobs go to leaf queues",
        id="a job naming a queue that has children",
    ),
    pytest.param(
        job("{status: Running, node: m}"),
        "bad.yaml:10: job j tasks[0].node: no node named 'm'",
        id="a task naming a missing node",
    ),
    pytest.param(
        job("{status: Binding}"),
        "bad.yaml:10: job j tasks[0].node: a Binding task needs a node",
        id="a non-Pending task without a node",
    ),
    pytest.param(
        job("{subGroup: w}"),
        "bad.yaml:10: job j tasks[0].subGroup: no subgroup named 'w' in the job's subGroups (none declared)",
        id="a subGroup not declared in the job",
    ),
    pytest.param(
        job(priorityClassName="gold"),
        "bad.yaml:9: job j priorityClassName: no priority class named 'gold'; classes: train, "
        "build-preemptible, build, inference",
        id="a priority class that does not exist",
    ),
    pytest.param(
        job(priority="50", priorityClassName="train"),
        "bad.yaml:9: job j priority: give priority or priorityClassName, not both",
        id="priority and priorityClassName together",
    ),
    pytest.param(
        job(preemptibility="sometimes"),
        "bad.yaml:9: job j preemptibility: unknown value 'sometimes'; want one of preemptible, non-preemptible",
        id="an unknown preemptibility",
    ),
    pytest.param(
        job(preemptionDelay="5 minutes"),
        'bad.yaml:9: job j preemptionDelay: expected a Go duration such as "90s" or "10m", got \'5 minutes\'',
        id="a duration that is not a Go duration",
    ),
    pytest.param(
        job(topologyConstraint="{topology: rack}"),
        "bad.yaml:9: job j topologyConstraint.topology: no topology named 'rack'; topologies: none declared",
        id="a topology constraint naming a missing topology",
    ),
    pytest.param(
        job(replicas="2"),
        "bad.yaml:9: job j replicas: give tasks, or replicas with a template, not both",
        id="tasks and replicas together",
    ),
    pytest.param(
        job("{name: p}") + "- {name: k, queue: team-a, tasks: [{name: p}]}\n",
        "bad.yaml:11: job k tasks[0].name: duplicate pod default/p (also in job j)",
        id="a pod name used twice in a namespace",
    ),
    pytest.param(
        "nodes:\n- {name: n, gpus: 8}\nqueues: [{name: q}]\njobs:\n"
        "- {name: j, queue: q, tasks: [{status: Binding, node: n, gpuMemory: 100}]}\n",
        "bad.yaml:5: job j tasks[0].gpuMemory: node 'n' has no gpuMemory to take 100 MiB from",
        id="a Binding gpuMemory task on a node without GPU memory",
    ),
    pytest.param(
        job() + "expect:\n  tasks:\n    ghost: {status: Running}\n",
        "bad.yaml:13: expect tasks ghost: no task named 'ghost' in the scenario",
        id="an expectation naming a missing task",
    ),
    pytest.param(
        job() + "expect:\n  tasks:\n    j-0: {state: Running}\n",
        "bad.yaml:13: expect tasks j-0.state: unknown field (did you mean status?); known fields: node, status",
        id="an unknown expectation key",
    ),
    pytest.param(
        job() + "expect:\n  maxBind: 1\n",
        "bad.yaml:12: expect block maxBind: unknown field (did you mean maxBinds?); known fields: jobs, "
        "maxBinds, maxEvictions, maxPipelines, nodes, queues, tasks",
        id="an unknown expect field",
    ),
    pytest.param(
        job() + "expect:\n  queues:\n    team-a: {fairShare: {gpus: 1}}\n",
        "bad.yaml:13: expect queues team-a.fairShare.gpus: unknown field (did you mean gpu?); known fields: "
        "cpu, gpu, memory",
        id="an unknown queue expectation resource",
    ),
    pytest.param(
        "nodes: [\n  {name: a\nqueues: []\n",
        "bad.yaml:3: invalid YAML: while parsing a flow mapping; did not find expected ',' or '}' (column 7)",
        id="invalid YAML is one line with file:line",
    ),
    pytest.param(
        "nodes: []\nnodes: []\n",
        "bad.yaml:2: invalid YAML: duplicate key 'nodes' (column 1)",
        id="a key repeated in one mapping",
    ),
    pytest.param(
        "",
        "bad.yaml: empty: expected a scenario or Kubernetes objects",
        id="an empty file",
    ),
    pytest.param(
        "name: x\n",
        "bad.yaml:1: neither a scenario (no nodes, queues or jobs) nor a Kubernetes object (needs "
        "apiVersion and kind); keys: name",
        id="a mapping that is neither form",
    ),
    pytest.param(
        "actions: allocate, reclaim\ntiers:\n- plugins: [{name: gang}]\n",
        "bad.yaml:1: a scheduler configuration (actions, tiers), not a scenario: give it with --config",
        id="a scheduler configuration given as the scenario says to use --config",
    ),
    pytest.param(
        CLUSTER + "generators:\n- {queue: team-a}\n",
        "bad.yaml:8: scenario top-level generators: read by `kai simulate` only (it draws the jobs): run "
        "`kai simulate FILE` (with --dashboard it records the views for `kai dashboard`)",
        id="a simulation's generators outside kai simulate name the command that reads them",
    ),
    pytest.param(
        "nodes: []\n---\nnodes: []\n",
        "bad.yaml: a scenario must be the only YAML document of its file",
        id="two scenario documents",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nstatus: {phase: Weird}\n",
        "bad.yaml:1: Pod default/p status.phase: unknown phase 'Weird'; want one of Pending, Running, "
        "Succeeded, Failed, Unknown",
        id="a manifest object its api parser rejects",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\n"
        "spec: {nodeName: b}\n",
        "bad.yaml:5: Pod default/p spec.nodeName: node 'b' does not exist",
        id="a manifest pod on a node the file lacks is located at its document",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priorityClassName: gold}\n",
        "bad.yaml:1: Pod default/p spec.priorityClassName: no PriorityClass 'gold' (the API server refuses such "
        "a pod); classes: build, build-preemptible, inference, train",
        id="a manifest pod naming a class neither the file nor KAI's install has",
    ),
    pytest.param(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {}\n",
        "bad.yaml:4: Node ? metadata.name: missing name",
        id="a List item without a name",
    ),
    pytest.param(
        job("{annotations: {gpu-fraction: '2'}}"),
        "bad.yaml:10: Pod default/j-0 metadata.annotations.gpu-fraction: want a number in (0, 1], got '2'",
        id="a built object the api parser rejects is located at its entry",
    ),
]


@pytest.mark.parametrize("text, message", REJECTS)
def test_rejects(text: str, message: str) -> None:
    with pytest.raises(ObjectError) as caught:
        loads(text, "bad.yaml")
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)


def test_missing_file_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ScenarioError) as caught:
        load(path)
    assert str(caught.value) == f"{path}: no such file"


def test_a_directory_is_not_a_scenario(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as caught:
        load(tmp_path)
    assert str(caught.value) == f"{tmp_path}: is a directory, not a scenario file"
