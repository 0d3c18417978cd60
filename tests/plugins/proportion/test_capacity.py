"""Queue capacity policy (BEHAVIOR.md §3.6 step 2): limits on every level, non-preemptible quota."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kai_scheduler.framework.shares import QueueShare
from kai_scheduler.plugins.proportion import capacity

U = -1.0
V = Sequence[float]


def share(
    name: str,
    *,
    limit: V = (U, U, U),
    deserved: V = (U, U, U),
    allocated: V = (0, 0, 0),
    non_preemptible: V = (0, 0, 0),
) -> QueueShare:
    z = np.zeros(3)
    return QueueShare(
        name=name,
        deserved=np.array(deserved, float),
        limit=np.array(limit, float),
        over_quota_weight=z.copy(),
        allocated=np.array(allocated, float),
        allocated_non_preemptible=np.array(non_preemptible, float),
        request=z.copy(),
        fair_share=z.copy(),
        usage=z.copy(),
    )


LIMITS = [
    pytest.param(
        [share("team-a", limit=(U, U, 8), allocated=(0, 0, 6))],
        (1000, 0, 4),
        "queue team-a would exceed its limit of 8 GPUs (6 GPUs allocated, job needs 4 GPUs)",
        id="leaf limit",
    ),
    pytest.param(
        [share("team-a", limit=(U, U, 8), allocated=(0, 0, 6))], (1000, 0, 2), None, id="exactly at the limit fits"
    ),
    pytest.param(
        [share("team-a", allocated=(0, 0, 6)), share("org", limit=(U, U, 10), allocated=(0, 0, 8))],
        (0, 0, 4),
        "queue org (parent of team-a) would exceed its limit of 10 GPUs (8 GPUs allocated, job needs 4 GPUs)",
        id="ancestor limit, named as the level that fails",
    ),
    pytest.param([share("team-a", limit=(U, U, U), allocated=(0, 0, 600))], (0, 0, 4), None, id="limit -1 is skipped"),
    pytest.param(
        [share("team-a", limit=(0, 0, 8), allocated=(0, 0, 0))],
        (0, 0, 4),
        None,
        id="a resource the job does not request is skipped, even with limit 0",
    ),
    pytest.param(
        [share("team-a", limit=(2000, U, U), allocated=(1500, 0, 0))],
        (1000, 0, 0),
        "queue team-a would exceed its limit of 2 CPU (1.5 CPU allocated, job needs 1 CPU)",
        id="cpu limit",
    ),
    pytest.param(
        [share("team-a", limit=(16, U, U), allocated=(0, 0, 0))],
        (2000, 0, 0),
        "queue team-a would exceed its limit of 0.016 CPU (0 CPU allocated, job needs 2 CPU); "
        "spec.resources.cpu.limit is in millicores: 16 is 0.016 CPU",
        id="a CPU limit in cores by mistake is told its unit",
    ),
    pytest.param(
        [share("team-a", limit=(U, 64e6, U), allocated=(0, 0, 0))],
        (0, 2**30, 0),
        "queue team-a would exceed its limit of 0.0596Gi memory (0Gi memory allocated, job needs 1Gi memory); "
        "spec.resources.memory.limit is in megabytes: 64 is 64 MB",
        id="a memory limit in GiB by mistake is told its unit",
    ),
    pytest.param(
        [share("team-a", limit=(100, U, U), allocated=(0, 0, 0))],
        (1000, 0, 0),
        "queue team-a would exceed its limit of 0.1 CPU (0 CPU allocated, job needs 1 CPU)",
        id="a CPU limit of 100 millicores is plausible: no unit note",
    ),
    pytest.param(
        [share("team-a", limit=(U, U, 0.3), allocated=(0, 0, 0.1))],
        (0, 0, 0.2),
        None,
        id="fractions that add up exactly fit despite float noise",
    ),
]


@pytest.mark.parametrize("chain, needs, want", LIMITS)
def test_over_limit(chain: list[QueueShare], needs: V, want: str | None) -> None:
    reject = capacity.over_limit(chain, needs)
    assert (reject and reject.message) == want
    if reject:
        assert (reject.plugin, reject.reason) == ("proportion", "OverLimit")


QUOTAS = [
    pytest.param(
        [share("team-a", deserved=(U, U, 4), non_preemptible=(0, 0, 2))],
        (0, 0, 4),
        "queue team-a: non-preemptible jobs may use only its deserved 4 GPUs (2 GPUs in use, job needs 4 GPUs)",
        id="non-preemptible over the leaf quota",
    ),
    pytest.param(
        [share("team-a", deserved=(U, U, 4), non_preemptible=(0, 0, 2))],
        (0, 0, 2),
        None,
        id="non-preemptible up to the quota fits",
    ),
    pytest.param(
        [share("team-a", deserved=(U, U, 4)), share("org", deserved=(U, U, 4), non_preemptible=(0, 0, 3))],
        (0, 0, 2),
        "queue org (parent of team-a): non-preemptible jobs may use only its deserved 4 GPUs "
        "(3 GPUs in use, job needs 2 GPUs)",
        id="non-preemptible over an ancestor's quota",
    ),
    pytest.param(
        [share("team-a", deserved=(8, U, U))],
        (1000, 0, 0),
        "queue team-a: non-preemptible jobs may use only its deserved 0.008 CPU (0 CPU in use, job needs 1 CPU); "
        "spec.resources.cpu.quota is in millicores: 8 is 0.008 CPU",
        id="a CPU quota in cores by mistake is told its unit",
    ),
    pytest.param(
        [share("team-a", deserved=(U, U, U), non_preemptible=(0, 0, 50))],
        (0, 0, 8),
        None,
        id="deserved -1 is unlimited",
    ),
]


@pytest.mark.parametrize("chain, needs, want", QUOTAS)
def test_non_preemptible_over_quota(chain: list[QueueShare], needs: V, want: str | None) -> None:
    reject = capacity.non_preemptible_over_quota(chain, needs)
    assert (reject and reject.message) == want
    if reject:
        assert reject.reason == "NonPreemptibleOverQuota"


def test_preemptible_use_does_not_count_against_the_quota_check() -> None:
    chain = [share("team-a", deserved=(U, U, 4), allocated=(0, 0, 10), non_preemptible=(0, 0, 0))]
    assert capacity.non_preemptible_over_quota(chain, (0, 0, 4)) is None
    assert capacity.over_limit(chain, (0, 0, 4)) is None  # and there is no fair-share or quota cap
