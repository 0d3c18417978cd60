"""gpufrag never over-commits a GPU: over random small clusters (those of test_sharing_topology: shared GPUs
already in use, pending fractions, memory requests, multi-device fractions, whole GPUs), one and three cycles
with gpufrag in place of gpupack leave every shared GPU within its memory, every node within its whole GPUs,
and every fractional task on as many groups as it asks devices."""

from __future__ import annotations

from hypothesis import given

from kai_scheduler.cluster.resources import GPU
from kai_scheduler.cluster.snapshot import Snapshot
from kai_scheduler.framework.config import DEFAULT_PLUGINS
from kai_scheduler.scheduler.scheduler import load_config
from kai_scheduler.sim.embedded import EmbeddedCluster
from tests import builders as b
from tests.property.test_sharing_topology import SETTINGS, Cluster, assert_shared_gpus_hold_their_sharers, clusters

EPS = 1e-6
_REPLACED = {"gpupack", "gpusharingorder", "nodeplacement"}
CONFIG = {
    "tiers": [
        {
            "plugins": [{"name": name, "arguments": args} for name, args in DEFAULT_PLUGINS if name not in _REPLACED]
            + [{"name": "gpufrag"}]
        }
    ]
}


def _check(snap: Snapshot) -> None:
    assert_shared_gpus_hold_their_sharers(snap)
    free = snap.arrays.free[:, GPU]
    assert (free >= -EPS).all(), f"whole GPUs over-committed: {free.tolist()}"


@SETTINGS
@given(cluster=clusters())
def test_one_cycle(cluster: Cluster) -> None:
    embedded = EmbeddedCluster(cluster.objects, load_config(CONFIG), now=b.NOW)
    _check(embedded.cycle().snapshot)


@SETTINGS
@given(cluster=clusters())
def test_three_cycles_with_the_embedded_binder(cluster: Cluster) -> None:
    embedded = EmbeddedCluster(cluster.objects, load_config(CONFIG), now=b.NOW)
    for result in embedded.run(3):
        _check(result.snapshot)
    _check(embedded.view())
