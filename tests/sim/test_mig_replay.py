"""The simulator counts MIG instances in GPUs as the scheduler does: their profiles' compute slices."""

from __future__ import annotations

import textwrap

from tests.sim.helpers import make

SCENARIO = textwrap.dedent("""
    nodes:
    - {name: a100, migStrategy: mixed, mig: {1g.10gb: 4, 3g.40gb: 1}}
    queues:
    - {name: a, resources: {gpu: {quota: -1, overQuotaWeight: 1, limit: -1}}}
    jobs:
    - {name: small, queue: a, duration: 10m, replicas: 2, template: {mig: {1g.10gb: 1}}}
    - {name: big, queue: a, duration: 10m, replicas: 1, template: {mig: {3g.40gb: 1}}}
""")


def test_instances_count_their_slices_in_the_cluster_and_in_what_runs() -> None:
    replay = make(SCENARIO)
    result = replay.run()
    assert result.total_gpus == 7  # 4 x 1 + 1 x 3
    header, rows = result.series.rows()
    column = header.index("allocated_gpus")
    assert max(row[column] for row in rows) == 5  # 2 x 1 + 3, all running at once
