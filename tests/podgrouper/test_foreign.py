"""Migration: pods written for Volcano or YuniKorn grouped and queued by their markers (`--migrate-from`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kai_scheduler.podgrouper.context import Config
from tests.podgrouper.helpers import Cluster, bare_pod

FIXTURES = Path(__file__).parent.parent / "fixtures" / "migrate"
BOTH = Config(migrate_from=frozenset({"volcano", "yunikorn"}))


def _volcano_pod(name: str, **labels: str) -> dict[str, object]:
    return bare_pod(name, annotations={"scheduling.k8s.io/group-name": "test"}, labels=labels or None)


def test_volcano_pods_join_one_podgroup_with_the_volcano_podgroups_min_member_and_queue() -> None:
    c = Cluster((FIXTURES / "volcano-podgroup.yaml").read_text(), config=BOTH)
    c.add(_volcano_pod("a"), _volcano_pod("b"), _volcano_pod("c"))
    c.group()
    pg = c.podgroup_of("a")
    assert pg["metadata"]["name"] == "pg-volcano-test"
    assert pg["spec"]["minMember"] == 3 and pg["spec"]["queue"] == "research"
    assert c.podgroup_of("c")["metadata"]["name"] == "pg-volcano-test"


def test_without_the_volcano_podgroup_the_queue_label_names_the_queue_and_the_map_applies() -> None:
    config = Config(migrate_from=frozenset({"volcano"}), queue_map={"research": "team-research"})
    c = Cluster(config=config)
    c.add(_volcano_pod("a", **{"volcano.sh/queue-name": "research"}))
    c.group()
    pg = c.podgroup_of("a")
    assert pg["spec"]["minMember"] == 1 and pg["spec"]["queue"] == "team-research"


def test_a_kai_queue_label_wins_over_the_foreign_queue() -> None:
    c = Cluster((FIXTURES / "volcano-podgroup.yaml").read_text(), config=BOTH)
    c.add(_volcano_pod("a", **{"kai.scheduler/queue": "mine"}))
    c.group()
    assert c.podgroup_of("a")["spec"]["queue"] == "mine"


def test_yunikorn_gang_pods_become_a_podgroup_with_a_subgroup_per_task_group() -> None:
    template = yaml.safe_load((FIXTURES / "yunikorn-gang-pod-template.yaml").read_text())["metadata"]
    c = Cluster(config=BOTH)
    for name in ("sleep-0", "sleep-1"):
        c.add(bare_pod(name, labels=template["labels"], annotations=template["annotations"]))
    c.group()
    pg = c.podgroup_of("sleep-0")
    assert pg["metadata"]["name"] == "pg-yunikorn-gang-scheduling-job-example"
    assert pg["spec"]["queue"] == "sandbox"  # root.sandbox: its last part, as kai migrate names it
    assert pg["spec"]["subGroups"] == [{"name": "task-group-example", "minMember": 2}]
    assert "minMember" not in pg["spec"]
    assert c.subgroup_of("sleep-1") == "task-group-example"
    assert c.podgroup_of("sleep-1")["metadata"]["name"] == pg["metadata"]["name"]


def test_a_yunikorn_application_without_task_groups_is_one_podgroup_of_min_member_one() -> None:
    c = Cluster(config=BOTH)
    c.add(bare_pod("p", labels={"yunikorn.apache.org/app-id": "app-1", "queue": "root.eng.ml"}))
    c.group()
    pg = c.podgroup_of("p")
    assert pg["metadata"]["name"] == "pg-yunikorn-app-1"
    assert pg["spec"]["queue"] == "ml" and pg["spec"]["minMember"] == 1


def test_migration_is_off_by_default() -> None:
    c = Cluster((FIXTURES / "volcano-podgroup.yaml").read_text())
    c.add(_volcano_pod("a"), bare_pod("y", labels={"applicationId": "app-1", "queue": "root.sandbox"}))
    c.group()
    assert c.podgroup_of("a")["metadata"]["name"].startswith("pg-a-")
    assert c.podgroup_of("a")["spec"]["queue"] == "default-queue"
    assert c.podgroup_of("y")["spec"]["queue"] == "default-queue"


@pytest.mark.parametrize(
    "annotations, message",
    [
        ({"yunikorn.apache.org/task-groups": "[{"}, "annotation yunikorn.apache.org/task-groups: not JSON"),
        ({"yunikorn.apache.org/task-groups": '[{"name": "g", "minMember": -1}]'}, "[0].minMember: want a count"),
        (
            {
                "yunikorn.apache.org/task-groups": '[{"name": "g", "minMember": 1}]',
                "yunikorn.apache.org/task-group-name": "h",
            },
            "no task group 'h'",
        ),
    ],
)
def test_bad_task_groups_skip_the_pod_with_one_line(
    annotations: dict[str, str], message: str, caplog: pytest.LogCaptureFixture
) -> None:
    c = Cluster(config=BOTH)
    c.add(bare_pod("p", labels={"applicationId": "app-1"}, annotations=annotations))
    c.group()
    assert c.podgroups() == []
    assert any(message in r.getMessage() or message in str(r.__dict__) for r in caplog.records), caplog.text


def test_the_flags_refuse_an_unknown_scheduler_and_a_bad_map_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kai_scheduler import cli

    assert cli.main(["podgrouper", "--migrate-from", "volcano,slurm"]) == cli.EXIT_USER_ERROR
    assert "--migrate-from: unknown scheduler 'slurm'; want volcano, yunikorn" in capsys.readouterr().err
    bad = tmp_path / "map.yaml"
    bad.write_text("- a\n")
    assert cli.main(["podgrouper", "--migrate-from", "volcano", "--queue-map", str(bad)]) == cli.EXIT_USER_ERROR
    assert "want a map of their queue name to a KAI Queue name" in capsys.readouterr().err


def test_the_example_queue_map_reads() -> None:
    from kai_scheduler.cli.components import _queue_map

    path = Path(__file__).resolve().parents[2] / "examples" / "migration" / "queue-map.yaml"
    assert _queue_map(str(path))["root.engineering.ml"] == "ml-training"
