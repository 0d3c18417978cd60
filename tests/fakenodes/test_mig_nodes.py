"""`kai fake-nodes --mig PROFILE=COUNT`: nodes of the mixed MIG strategy."""

from __future__ import annotations

import pytest

from kai_scheduler.api import Node
from kai_scheduler.api.errors import UserError
from kai_scheduler.fakenodes.nodes import FleetSpec, build_node, parse_mig


def test_mig_nodes_expose_their_instances_and_the_mixed_strategy() -> None:
    spec = FleetSpec(gpus=0, mig=(("1g.10gb", 7), ("3g.40gb", 1)))
    raw = build_node(spec, 0, 0.0)
    assert raw["status"]["capacity"]["nvidia.com/mig-1g.10gb"] == "7"
    assert raw["status"]["allocatable"]["nvidia.com/mig-3g.40gb"] == "1"
    assert raw["metadata"]["labels"]["nvidia.com/mig.strategy"] == "mixed"
    assert Node.from_dict(raw).allocatable["nvidia.com/mig-1g.10gb"] == 7


def test_nodes_without_mig_have_no_strategy_label() -> None:
    assert "nvidia.com/mig.strategy" not in build_node(FleetSpec(), 0, 0.0)["metadata"]["labels"]


def test_the_flag_parses_profile_and_count() -> None:
    assert parse_mig("1g.10gb=7") == ("1g.10gb", 7)


@pytest.mark.parametrize("text", ["1g.10gb", "huge=2", "1g.10gb=0", "1g.10gb=two", "=3"])
def test_a_bad_flag_is_one_line_naming_it(text: str) -> None:
    with pytest.raises(UserError, match=r"^--mig: want ") as err:
        parse_mig(text)
    assert "\n" not in str(err.value)
