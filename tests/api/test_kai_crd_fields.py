"""Every field of KAI's Config and SchedulingShard CRDs parses: a KAI user's CRs are not refused for a field."""

from __future__ import annotations

from pathlib import Path

import yaml

from kai_scheduler.admission.operator import ignored_message, parse_shard
from kai_scheduler.api import kaiconfig
from tests.operator.builders import config, shard

EVERY_FIELD = Path(__file__).parent / "data" / "kai_config_every_field.yaml"


def test_a_config_setting_every_field_of_kais_crd_parses_and_names_what_it_ignores() -> None:
    cfg = kaiconfig.Config.from_dict(yaml.safe_load(EVERY_FIELD.read_text()))
    assert cfg.values["namespace.name"] == "kai-system"
    assert cfg.values["global.gpuSharing"] is True  # KAI's admission.gpuSharing
    assert cfg.prometheus == kaiconfig.Prometheus(enabled=True, external_url="x", instance_name="x")
    for path in (
        "spec.global.daemonsetsTolerations",
        "spec.numaPlacementExporter",
        "spec.binder.service.resources.claims",
    ):
        assert any(p == path or p.startswith(f"{path}.") for p in cfg.ignored), path


def test_a_resource_other_than_cpu_and_memory_is_ignored_and_named_but_still_a_quantity() -> None:
    cfg = kaiconfig.Config.from_dict(config(binder={"resources": {"limits": {"cpu": "1", "ephemeral-storage": "1Gi"}}}))
    assert cfg.values == {"binder.resources.limits.cpu": "1"}
    assert cfg.ignored == ["spec.binder.resources.limits.ephemeral-storage"]


def test_a_shard_setting_every_field_of_kais_crd_parses() -> None:
    parsed = parse_shard(
        shard(
            "every",
            args={"leader-elect": "true", "v": "4", "qps": "100", "burst": "200"},
            goMemLimitRatio=0.85,
            goMemLimit="6Gi",
            placementStrategy={"gpu": "spread", "cpu": "binpack"},
            partitionLabelValue="pool",
            queueDepthPerAction={"allocate": 25},
            minRuntime={"preemptMinRuntime": "10m", "reclaimMinRuntime": "5m"},
            kValue=0.5,
            usageDBConfig={"clientType": "prometheus", "usageParams": {"windowSize": "1w", "halfLifePeriod": "10m"}},
            scenarioSearchBudgets={
                "maxActionSearchDuration": {"default": "5m"},
                "maxJobSearchDuration": "4m",
                "minJobSearchDuration": "0s",
                "maxGeneratorSearchDuration": {"default": "2m"},
            },
            plugins={"proportion": {"enabled": True, "priority": 1800, "arguments": {"kValue": "0.5"}}},
            actions={"consolidation": {"enabled": False, "priority": 400}},
        )
    )
    assert parsed.spec.go_mem_limit == "6Gi" and parsed.spec.args["v"] == "4"
    assert ignored_message(parsed) == ""
