"""`kai migrate`: Volcano Queues and YuniKorn's queues.yaml (fixtures written after their documentation's
examples, tests/fixtures/migrate) as KAI Queues, with what did not map on stderr."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kai_scheduler import cli
from kai_scheduler.api import Queue

FIXTURES = Path(__file__).parent.parent / "fixtures" / "migrate"


def _migrate(capsys: pytest.CaptureFixture[str], source: str, path: Path) -> tuple[dict[str, Queue], list[str]]:
    assert cli.main(["migrate", "--from", source, str(path)]) == 0
    out, err = capsys.readouterr()
    queues = [Queue.from_dict(d) for d in yaml.safe_load_all(out)]
    return {q.name: q for q in queues}, err.splitlines()


def _res(q: Queue, resource: str) -> tuple[float, float, float]:
    r = q.resources[resource]
    return r.quota, r.over_quota_weight, r.limit


def test_volcano_queues_become_kai_queues(capsys: pytest.CaptureFixture[str]) -> None:
    queues, unmapped = _migrate(capsys, "volcano", FIXTURES / "volcano-queues.yaml")
    assert list(queues) == ["test", "research", "research-nlp", "reserved"]  # root is not written
    research = queues["research"]
    assert research.parent_queue == ""  # root's child: a top-level queue
    assert _res(research, "gpu") == (16, 3, 32)  # deserved, weight, capability
    assert _res(research, "cpu") == (40000, 3, 80000)  # millicores
    assert _res(research, "memory") == (214748, 3, 429497)  # 200Gi, 400Gi in megabytes
    nlp = queues["research-nlp"]
    assert nlp.parent_queue == "research" and nlp.priority == 150
    assert _res(nlp, "cpu") == (20000, 2, -1)  # no capability: no limit
    assert _res(queues["reserved"], "cpu") == (8000, 1, -1)  # guarantee without deserved: the quota
    assert _res(queues["test"], "gpu") == (0, 1, -1)
    assert unmapped == [
        "not mapped: Queue test spec.reclaimable: false has no KAI equivalent",
        "not mapped: Queue root: Volcano's root queue is not written; its children are top-level queues",
        "not mapped: Queue research spec.guarantee: KAI has no reservation apart from the quota; "
        "the quota is spec.deserved",
        "not mapped: Queue research-nlp spec.capability.volcano.sh/vgpu-number: 8: KAI queues count only cpu, "
        "memory and nvidia.com/gpu",
    ]


def test_yunikorn_queues_become_kai_queues(capsys: pytest.CaptureFixture[str]) -> None:
    queues, unmapped = _migrate(capsys, "yunikorn", FIXTURES / "yunikorn-queues.yaml")
    assert list(queues) == ["engineering", "frontend", "ml-training", "sandbox", "gpu-frontend"]
    eng = queues["engineering"]
    assert eng.parent_queue == "" and eng.priority == 110  # priority.offset 10
    assert _res(eng, "gpu") == (16, 1, 32)
    assert _res(eng, "cpu") == (100000, 1, 200000)  # vcore in cores → millicores
    assert queues["frontend"].parent_queue == "engineering"
    ml = queues["ml-training"]
    assert ml.display_name == "ml_Training" and _res(ml, "cpu") == (40000, 1, -1)
    assert _res(queues["sandbox"], "memory") == (0, 1, 68719)
    assert queues["gpu-frontend"].display_name == "frontend"
    assert "not mapped: partition gpu: KAI has no partitions; its queues are prefixed 'gpu-'" in unmapped
    assert any("ml_Training.submitacl" in line and "allowedNamespaces" in line for line in unmapped)
    assert any("sandbox.resources.max.pods: 100" in line for line in unmapped)
    assert any("maxapplications: 20" in line for line in unmapped)


def test_the_yunikorn_configmap_is_read_too(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    text = (FIXTURES / "yunikorn-queues.yaml").read_text()
    cm: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "yunikorn-configs", "namespace": "yunikorn"},
        "data": {"queues.yaml": text},
    }
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump(cm))
    queues, _ = _migrate(capsys, "yunikorn", path)
    assert "engineering" in queues


@pytest.mark.parametrize(
    "source, text, message",
    [
        ("volcano", "a: [", "not YAML (line 1)"),
        ("volcano", "kind: Pod\n", "no Volcano Queue"),
        (
            "volcano",
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
            "spec: {capability: {cpu: lots}}\n",
            "Queue q spec.capability.cpu: not a quantity: 'lots'",
        ),
        (
            "volcano",
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {parent: ghost}\n",
            "Queue q spec.parent: no Queue named 'ghost' in the file",
        ),
        (
            "volcano",
            "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: -1}\n",
            "Queue q spec.weight: expected a number at least 0",
        ),
        ("yunikorn", "queues: []\n", "no partitions"),
        ("yunikorn", "partitions:\n- name: default\n  queues: [{name: root}]\n", "no queue below root"),
        (
            "yunikorn",
            "partitions:\n- queues:\n  - name: root\n    queues: [{name: a, resources: {max: {vcore: x}}}]\n",
            "queue a.resources.max.cpu: not a quantity: 'x'",
        ),
    ],
)
def test_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, source: str, text: str, message: str
) -> None:
    path = tmp_path / "in.yaml"
    path.write_text(text)
    assert cli.main(["migrate", "--from", source, str(path)]) == cli.EXIT_USER_ERROR
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and message in err, err


def test_a_missing_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["migrate", "--from", "volcano", str(tmp_path / "absent.yaml")]) == cli.EXIT_USER_ERROR
    assert "absent.yaml: No such file or directory" in capsys.readouterr().err
