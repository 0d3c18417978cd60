"""docs/scenario-reference.md documents every field the loader accepts, and no other, and its example loads.

Each section's table lists fields in its first column; the test compares them with the loader's own lists, so
adding a field to the loader without documenting it (or documenting one it does not take) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kai_scheduler import cli
from kai_scheduler.scenario import autoscaler, build, cluster, dra, expect, jobs, tasks
from kai_scheduler.sim import generators, sources

DOC = Path(__file__).resolve().parents[2] / "docs" / "scenario-reference.md"

# (heading, the row that starts the table under it) → the loader's fields
TABLES = {
    ("Top level", None): (*build.TOP_FIELDS, sources.GENERATORS_KEY),
    ("shards", None): build.SHARD_FIELDS,
    ("priorityClasses", None): cluster.PRIORITY_CLASS_FIELDS,
    ("namespaces", None): cluster.NAMESPACE_FIELDS,
    ("topologies", None): cluster.TOPOLOGY_FIELDS,
    ("topologies", "Topology levels:"): cluster.TOPOLOGY_LEVEL_FIELDS,
    ("nodes", None): cluster.NODE_FIELDS,
    ("queues", None): cluster.QUEUE_FIELDS,
    ("queues", "Queue resources"): cluster.QUEUE_RESOURCE_FIELDS,
    ("jobs", None): jobs.JOB_FIELDS,
    ("jobs", "Subgroups"): jobs.SUB_GROUP_FIELDS,
    ("jobs", "Topology constraint"): jobs.CONSTRAINT_FIELDS,
    ("jobs", "Owner"): jobs.OWNER_FIELDS,
    ("tasks and template", None): tasks.TASK_FIELDS,
    ("expect", None): expect.EXPECT_FIELDS,
    ("generators", None): generators.GENERATOR_FIELDS,
    ("autoscaler", None): autoscaler.AUTOSCALER_FIELDS,
    ("autoscaler", "The node shape:"): autoscaler.NODE_SHAPE_FIELDS,
    ("DRA devices and claims", "DeviceClasses"): dra.DEVICE_CLASS_FIELDS,
    ("DRA devices and claims", "A node's `draDevices`"): dra.DEVICE_FIELDS,
    ("DRA devices and claims", "Network-attached pools"): dra.POOL_FIELDS,
    ("DRA devices and claims", "Shared claims"): dra.CLAIM_FIELDS,
    ("DRA devices and claims", "A task's `claims`"): dra.TASK_CLAIM_FIELDS,
}


def _section(text: str, heading: str) -> str:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    assert match, f"no section {heading!r}"
    return match.group(1)


def _table_fields(section: str, lead: str | None) -> list[str]:
    """The backquoted first cells of the first table after the paragraph starting `lead` (or the first)."""
    start = 0 if lead is None else section.index("\n" + lead) + 1
    rows = []
    for line in section[start:].splitlines():
        if line.startswith("| `"):
            rows.append(line.split("`")[1])
        elif rows and not line.startswith("|"):
            break
    return rows


@pytest.mark.parametrize(
    ("where", "fields"), list(TABLES.items()), ids=[f"{h} {lead or ''}".strip() for h, lead in TABLES]
)
def test_the_reference_lists_exactly_the_fields_the_loader_takes(
    where: tuple[str, str | None], fields: tuple[str, ...]
) -> None:
    heading, lead = where
    documented = _table_fields(_section(DOC.read_text(encoding="utf-8"), heading), lead)
    assert sorted(documented) == sorted(fields)


def test_the_example_loads_and_its_expectations_hold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = re.search(r"## A complete example\n\n```yaml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert example
    path = tmp_path / "example.yaml"
    path.write_text(example.group(1), encoding="utf-8")
    code = cli.main(["schedule", str(path), "--check"])
    assert code == 0, capsys.readouterr().err


def test_the_docs_and_help_name_no_file_outside_the_repository(capsys: pytest.CaptureFixture[str]) -> None:
    root = DOC.parents[1]
    texts = {p.relative_to(root): p.read_text(encoding="utf-8") for p in [root / "README.md", *root.glob("docs/*.md")]}
    for command in ("schedule", "simulate", "scheduler", "run", "admission", "podgrouper", "node-scale-adjuster"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        texts[Path(f"kai {command} --help")] = capsys.readouterr().out
    for name, text in texts.items():
        assert "SCENARIOS.md" not in text and "BEHAVIOR.md" not in text, name
