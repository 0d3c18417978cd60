"""KAI's node score scale (§4, KAI `plugins/scores/scores.go`).

Node scores from all NODE_ORDER plugins are summed, so each plugin scores in its own decade: a higher-decade
preference (a nominated node, a k8s plugin, topology) always outweighs every lower one put together, and the
lower ones only break ties inside it. Keep new scores on this scale.
"""

from __future__ import annotations

from typing import Final

MAX_HIGH_DENSITY: Final = 9.0  # nodeplacement binpack/spread
RESOURCE_TYPE: Final = 10.0  # resourcetype: CPU-only task on a CPU-only node
NUMA: Final = 100.0
AVAILABILITY: Final = 1000.0  # nodeavailability: fits on idle, no need to wait for releasing pods
GPU_SHARING: Final = 10000.0  # gpusharingorder
TOPOLOGY: Final = 100000.0
K8S_PLUGINS: Final = 1000000.0
NOMINATED_NODE: Final = 10000000.0
