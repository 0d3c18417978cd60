"""Task order: task-priority label, Kubeflow master/launcher, Ray head; each only decides its own rule."""

from __future__ import annotations

import pytest

from kai_scheduler.api import constants
from kai_scheduler.api.pod import Pod
from kai_scheduler.framework.config import ConfigError
from kai_scheduler.plugins.taskorder import Kubeflow, Ray, TaskOrder
from tests.plugins import builders as b
from tests.plugins.builders import node, pod

PRIORITY = constants.LABEL_TASK_PRIORITY
ROLE = constants.LABEL_KUBEFLOW_JOB_ROLE
RAY = constants.LABEL_RAY_NODE_TYPE


def _order(plugin: TaskOrder | Kubeflow | Ray, left: dict[str, str], right: dict[str, str]) -> int:
    pods = [pod("l", group="g", labels=left), pod("r", group="g", labels=right)]
    snap = b.snapshot(nodes=[node("n1")], pods=pods)
    return plugin.task_order(b.task(snap, "l"), b.task(snap, "r"))


@pytest.mark.parametrize(
    "plugin, left, right, want",
    [
        pytest.param(TaskOrder(), {PRIORITY: "1"}, {}, -1, id="task-priority present beats absent"),
        pytest.param(TaskOrder(), {}, {PRIORITY: "-5"}, 1, id="absent loses even to a negative priority"),
        pytest.param(TaskOrder(), {PRIORITY: "5"}, {PRIORITY: "10"}, 1, id="higher task-priority first"),
        pytest.param(TaskOrder(), {PRIORITY: "5"}, {PRIORITY: "5"}, 0, id="equal task-priority is a tie"),
        pytest.param(TaskOrder(), {}, {}, 0, id="no task-priority is a tie"),
        pytest.param(Kubeflow(), {ROLE: "master"}, {ROLE: "worker"}, -1, id="kubeflow master first"),
        pytest.param(Kubeflow(), {ROLE: "worker"}, {ROLE: "launcher"}, 1, id="kubeflow launcher first"),
        pytest.param(Kubeflow(), {ROLE: "worker"}, {}, 0, id="kubeflow workers tie"),
        pytest.param(Ray(), {RAY: "head"}, {RAY: "worker"}, -1, id="ray head first"),
        pytest.param(Ray(), {RAY: "worker"}, {RAY: "worker"}, 0, id="ray workers tie"),
    ],
)
def test_task_order(plugin: TaskOrder | Kubeflow | Ray, left: dict[str, str], right: dict[str, str], want: int) -> None:
    assert _order(plugin, left, right) == want


def test_session_chains_kubeflow_ray_taskorder_then_age() -> None:
    pods: list[Pod] = [
        pod("w-old", group="g", created=1),
        pod("w-prio", group="g", created=9, labels={PRIORITY: "3"}),
        pod("head", group="g", created=9, labels={RAY: "head"}),
        pod("master", group="g", created=9, labels={ROLE: "master"}),
        pod("w-new", group="g", created=5),
    ]
    snap = b.snapshot(nodes=[node("n1")], pods=pods)
    ssn = b.session(snap, Kubeflow(), Ray(), TaskOrder())
    assert [t.name for t in sorted(snap.tasks.values(), key=ssn.task_key)] == [
        "master",
        "head",
        "w-prio",
        "w-old",
        "w-new",
    ]


@pytest.mark.parametrize("plugin", [TaskOrder, Kubeflow, Ray])
def test_arguments_are_rejected(plugin: type[TaskOrder | Kubeflow | Ray]) -> None:
    with pytest.raises(ConfigError, match=f"plugin {plugin.name}: takes no arguments"):
        plugin.from_args({"x": "1"})
